"""Where gpubot keeps its state file by default: one absolute path per user, whatever the directory.

A relative default (the old ``gpubot-state.db``) gave every working directory its own state, so
two terminals shared no pending actions and no audit trail. The default is now
``$XDG_STATE_HOME/gpubot/state.db`` (``~/.local/state/gpubot/state.db`` when unset, as the XDG
Base Directory spec says), in a directory only its owner may enter. An explicit ``state_path``
setting is used as given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_state_path(env: Mapping[str, str] | None = None) -> str:
    """``$XDG_STATE_HOME/gpubot/state.db``; a relative or empty XDG_STATE_HOME is ignored (the spec)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "gpubot", "state.db")


def ensure_state_dir(path: str | Path) -> None:
    """Create the state file's directory if it is missing, readable by its owner only (0700)."""
    Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
