"""Issue 29 F2: the default state file is absolute and per user, wherever a command runs from.

Before: ``state_path`` defaulted to ``gpubot-state.db`` relative to the working directory, so two
terminals in different directories kept two states: two audit trails, two locks. Now it is
``$XDG_STATE_HOME/gpubot/state.db`` (``~/.local/state/gpubot/state.db``), its directory created
for its owner only, and ``gpubot audit`` says where the trail lives. An explicit setting wins.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from bot.settings import load_settings
from tests.faults.cli_rig import ROOT


def test_the_default_is_the_users_xdg_state_directory(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    assert load_settings(env={"XDG_STATE_HOME": str(xdg)}).state_path == str(xdg / "gpubot" / "state.db")
    home = tmp_path / "home"
    expected = str(home / ".local" / "state" / "gpubot" / "state.db")
    assert load_settings(env={"HOME": str(home)}).state_path == expected
    # the XDG spec: a relative XDG_STATE_HOME is invalid and ignored
    assert load_settings(env={"HOME": str(home), "XDG_STATE_HOME": "rel/dir"}).state_path == expected
    explicit = {"HOME": str(home), "GPUBOT_STATE_PATH": "/srv/gpubot/state.db"}
    assert load_settings(env=explicit).state_path == "/srv/gpubot/state.db"
    assert load_settings(env={"HOME": str(home)}, state_path="here.db").state_path == "here.db"


def _audit(cwd: Path, home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_") and k != "XDG_STATE_HOME"}
    env.update({"HOME": str(home), "PYTHONPATH": str(ROOT)})
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "audit"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_two_terminals_in_different_directories_share_one_state_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first, second = tmp_path / "a", tmp_path / "b"
    for d in (home, first, second):
        d.mkdir()
    state = home / ".local" / "state" / "gpubot" / "state.db"
    out_first, out_second = _audit(first, home), _audit(second, home)
    assert f"audit trail: {state} (state: sqlite)" in out_first
    assert out_first.splitlines()[0] == out_second.splitlines()[0]
    assert state.exists() and not list(first.iterdir()) and not list(second.iterdir())
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
