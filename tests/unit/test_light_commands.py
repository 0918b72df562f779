"""Commands that read no cluster load neither the Kubernetes client nor asyncssh.

``gpubot runbook`` and ``help`` load every runbook and cross-check it against every built-in
check, so an import of the probes' transports from a check module (or from what the checks read)
made them pay the Kubernetes client's and asyncssh's start-up (0.8 s against 0.24 s).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes", "asyncssh", "aiohttp", "slack_bolt")


@pytest.mark.parametrize("argv", [["runbook"], ["runbook", "guide-checkpoint-zombie"], ["help"], ["--help"]])
def test_a_command_without_a_cluster_imports_no_transport(argv: list[str]) -> None:
    script = (
        "import contextlib, io, json, sys\n"
        "from bot.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        code = main({argv!r})\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    code, loaded = json.loads(proc.stdout.splitlines()[-1])
    assert code in (0, None) and loaded == []
