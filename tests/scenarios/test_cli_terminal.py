"""The CLI on a terminal and on a pipe, through a real pseudo-terminal: a progress line while a
slow command reads (erased before the answer), colour and the terminal's width; on a pipe, or
with NO_COLOR, none of it.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import yaml

from tests import yaml_data

ROOT = Path(__file__).resolve().parents[2]
ARGV = [sys.executable, "-m", "bot.cli", "why-pending", "gpu-full-5d8c6-q7wz2", "-n", "ai"]
ERASE = "\r\x1b[K"
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
#: the slow read: the first node list answers after this long (well past the progress delay of 1 s)
SLOW_S = 2.5


@pytest.fixture(scope="module")
def slow_scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = yaml_data.load_file(ROOT / "scenarios" / "zombie-checkpoint.yaml")
    data.pop("expect", None)
    data["base"] = str(ROOT / "scenarios" / data["base"])  # the copy lives elsewhere
    data["api"] = {"faults": [{"match": "/api/v1/nodes", "verb": "GET", "delay_s": SLOW_S, "times": 1}]}
    path = tmp_path_factory.mktemp("slow") / "slow-zombie.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _on_a_terminal(argv: list[str], *, columns: int = 150, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` with stdout and stderr on one pseudo-terminal of ``columns``; (status, what the
    terminal received, in order)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=ROOT,
                            env={**os.environ, "TERM": "xterm", **(env or {})})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=120)
    return code, b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def test_a_slow_command_shows_progress_on_the_terminal_and_erases_it(slow_scenario: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    code, seen = _on_a_terminal([*ARGV, "--scenario", str(slow_scenario)], env={**env, "NO_COLOR": ""})
    assert code == 4, seen[-2000:]
    assert ERASE in seen, seen[:2000]
    before, answer = seen.rsplit(ERASE, 1)  # the last erase: the line goes before the answer prints
    shown = [line for line in before.split(ERASE) if line.strip()]
    assert any(re.search(r"reading .*nodes", line) for line in shown), shown  # what is read, as it happens
    assert all(line.endswith(" s") for line in shown)  # with the seconds counting
    assert answer.lstrip().startswith("gpubot why-pending gpu-full-5d8c6-q7wz2 in ai"), answer[:300]
    assert "reading" not in answer and "\r" not in answer
    # the terminal's width (150 columns here), and colour: a severity in red
    lines = COLOUR.sub("", answer).splitlines()
    assert 100 < max(len(line) for line in lines if not line.lstrip().startswith("|")) <= 150
    assert "\x1b[31;1m[CRITICAL]\x1b[0m" in answer


def test_a_pipe_gets_the_answer_only(slow_scenario: Path) -> None:
    done = subprocess.run([*ARGV, "--scenario", str(slow_scenario)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 4
    assert done.stderr == ""  # no progress line, no escape sequence
    assert "\x1b" not in done.stdout and "[CRITICAL]" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines() if not line.lstrip().startswith("|")) <= 100


def test_no_color_and_json_on_a_terminal(slow_scenario: Path) -> None:
    code, seen = _on_a_terminal([*ARGV, "--scenario", str(slow_scenario)], env={"NO_COLOR": "1"})
    assert code == 4 and "[CRITICAL]" in seen
    assert not COLOUR.search(seen)  # NO_COLOR: no colour (the progress line may still be drawn)
    code, seen = _on_a_terminal([*ARGV, "--scenario", str(slow_scenario), "-o", "json"])
    assert code == 4
    assert ERASE not in seen and "\x1b" not in seen  # a program reads JSON: no progress line
    assert seen.strip().startswith("{")
