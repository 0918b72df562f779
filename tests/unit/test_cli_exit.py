"""The ``gpubot`` process ends with ``os._exit`` after its answer: output whole, atexit run, same status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
    "from bot.cli import run\n"
    "sys.argv = ['gpubot', *sys.argv[1:]]\n"
    "run()\n"
)


def _gpubot(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )


def test_a_long_answer_reaches_a_pipe_whole_and_atexit_handlers_run() -> None:
    plain = "from bot.cli import main; raise SystemExit(main(['runbook', 'guide-checkpoint-zombie']))"
    inproc = subprocess.run(
        [sys.executable, "-c", plain], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    proc = _gpubot("runbook", "guide-checkpoint-zombie")
    assert proc.returncode == inproc.returncode == 0
    assert proc.stdout == inproc.stdout and len(proc.stdout) > 1000
    assert proc.stderr == "atexit ran\n"


@pytest.mark.parametrize(("argv", "status"), [(("why-pending", "Bad_Name"), 2), (("frobnicate",), 2)])
def test_the_exit_status_is_mains(argv: tuple[str, ...], status: int) -> None:
    proc = _gpubot(*argv)
    assert proc.returncode == status
    assert proc.stderr.startswith("gpubot: ") and proc.stderr.endswith("atexit ran\n")
