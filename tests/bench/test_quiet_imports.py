"""A benchmark process, like every gpubot command, prints nothing about asyncssh's import of
cryptography's DSA types (bot/library_warnings.py): its output is figures a person reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stderr(code: str) -> str:
    return subprocess.run([sys.executable, "-W", "default", "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True).stderr


def test_a_benchmark_process_is_quiet_about_asyncssh_s_dsa_import() -> None:
    assert "DSA is deprecated" in _stderr("import asyncssh"), "the library still warns: nothing to quiet"
    assert _stderr("import bench, asyncssh") == ""
