"""Find or install the checkov security scanner, and run it on rendered manifests.

checkov pins ``packaging<24`` and (through boto3) ``python-dateutil<3``, which conflict with
pytest 9 and kubernetes 37, so it cannot live in the project's environment or its ``dev`` extra.
It gets its own virtualenv, installed once from PyPI at the version pinned in
``checkov-requirements.txt`` and cached under ``~/.cache/gpubot-tools`` (``GPUBOT_CHECKOV`` may
name an existing ``checkov`` executable instead). The scan itself runs offline
(``--skip-download``): no API key, nothing uploaded.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "checkov-requirements.txt"


def _tool_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    pin = REQUIREMENTS.read_text().strip().replace("==", "-")
    return cache / "gpubot-tools" / pin


def checkov() -> str:
    """Path of a working checkov executable, installing the pinned one on first use."""
    given = os.environ.get("GPUBOT_CHECKOV")
    if given:
        return given
    venv = _tool_dir()
    exe = venv / "bin" / "checkov"
    done = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others wait, then reuse it
        if not done.exists():
            _install(venv)
            done.write_text(REQUIREMENTS.read_text())
    return str(exe)


def _install(venv: Path) -> None:
    """The pinned checkov into a new virtualenv at ``venv``: with uv where the project's
    environment has it (scripts/bootstrap.sh installs it; seconds, where pip took 60-100 s of
    every CI run, whose HOME is fresh), else, or if uv fails, with pip."""
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True, timeout=120)
        proc = _run([str(uv), "pip", "install", "--quiet", "--native-tls", "--python", str(venv / "bin" / "python"),
                     "-r", str(REQUIREMENTS)])
        if proc.returncode == 0:
            return
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
    # --no-compile: byte-compiling all ~100 packages cost 20 s of CPU on every CI run (a fresh
    # HOME); the scan compiles only what it imports, once
    proc = _run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", "-r", str(REQUIREMENTS)])
    if proc.returncode != 0:
        raise AssertionError(f"installing checkov into {venv} failed:\n{proc.stderr[-3000:]}")


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def scan(directory: Path, frameworks: list[str]) -> list[dict[str, Any]]:
    """Failed checks (check_id, resource, file_path, check_name) in every file under ``directory``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BC_", "PRISMA_", "CKV_"))}
    proc = subprocess.run(
        [
            checkov(),
            "--directory",
            str(directory),
            "--framework",
            *frameworks,
            "--output",
            "json",
            "--skip-download",
            "--soft-fail",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"checkov failed to run (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    reports = json.loads(proc.stdout)
    if isinstance(reports, dict):
        reports = [reports]
    failed: list[dict[str, Any]] = []
    scanned = 0
    for report in reports:
        if "results" not in report:  # a framework that found no file answers with a bare summary
            continue
        scanned += report["summary"]["passed"] + report["summary"]["failed"]
        failed.extend(report["results"]["failed_checks"])
    if scanned == 0:
        raise AssertionError(f"checkov ran no check on {directory}: output was\n{proc.stdout[:2000]}")
    return failed
