"""The validated runbook set kept beside gpubot's bytecode, so a command does not parse it again.

Why: every ``gpubot`` process read, parsed (with line marks) and cross-checked the same 18 YAML
files before it read the cluster: about 30 ms of a cold why-pending that takes about 0.4 s, for
a result that only changes when a runbook file or gpubot's code does. The set is a tree of plain
dataclasses (``bot.engine.runbook_model``), so it keeps as a pickle: loading it takes about 1 ms.

The file is ``__pycache__/runbook_dir.<tag>.<directory hash>.runbooks`` (``bot.kept``): one per
runbook directory, so a process with an override directory never replaces the built-in set that
the others read. It holds its set with the key: the directory and each runbook file's path, mtime
and size; ``bot.kept`` adds the stamp of every gpubot module (the checks' declared parameters and
the validation code decide the result too). Any difference is a miss, and the files are read as
before.
``runbook_dir.keep_builtin`` writes it always (``python -m bot.precompile`` runs it).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from bot.kept import KeptFile

#: the key of a validated set: its directory and its files' (path, mtime_ns, size)
SetKey = tuple[str, tuple[tuple[str, int, int], ...]]

KEPT = KeptFile(os.path.join(os.path.dirname(__file__), "runbook_dir.py"), "runbooks", version=2)


def _part(key: SetKey) -> str:
    """The file of ``key``'s directory."""
    return hashlib.sha256(key[0].encode()).hexdigest()[:16]


def load(key: SetKey) -> tuple[Any, list[str]] | None:
    """The set and its problems kept for ``key``, or None (missing, stale, foreign or damaged)."""
    kept = KEPT.load(key, _part(key))
    if kept is None:
        return None
    rs, problems = kept
    return rs, list(problems)


def save(key: SetKey, rs: Any, problems: list[str], *, always: bool = False) -> None:
    """Keep the set for ``key``; quietly not at all where the folder cannot be written."""
    KEPT.save(key, (rs, list(problems)), _part(key), always=always)
