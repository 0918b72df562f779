"""The validated runbook set kept beside gpubot's bytecode, so a command does not parse it again.

Why: every ``gpubot`` process read, parsed (with line marks) and cross-checked the same 18 YAML
files before it read the cluster: about 30 ms of a cold why-pending that takes about 0.4 s, for
a result that only changes when a runbook file or gpubot's code does. The set is a tree of plain
dataclasses (``bot.engine.runbook_model``), so it keeps as a pickle: loading it takes about 1 ms.

The file is ``__pycache__/runbook_dir.<tag>.runbooks`` beside this package's bytecode, written
where Python itself would write bytecode (not under ``PYTHONDONTWRITEBYTECODE``, not into a folder
it may not write), or always by ``runbook_dir.keep_builtin`` (``python -m bot.precompile`` runs it, as an installer
runs ``compileall``). It holds one set, with its key: the runbook directory, each runbook file's path,
mtime and size, and the same for every module of gpubot (the checks' declared parameters and
the validation code decide the result too). Any difference is a miss, and the files are read
as before. Its trust is that of a ``.pyc``: gpubot's own folder, written by gpubot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pickle
import sys
from typing import Any

from bot.dataclass_code import write_beside_bytecode

#: what the file starts with; another interpreter or layout ignores it
MAGIC = importlib.util.MAGIC_NUMBER + b"gpubot-runbooks-1\n"
#: the key of a validated set: its directory and its files' (path, mtime_ns, size)
SetKey = tuple[str, tuple[tuple[str, int, int], ...]]


def cache_path() -> str | None:
    """Where the file goes: beside ``runbook_dir``'s bytecode; None where there is no such place."""
    source = os.path.join(os.path.dirname(__file__), "runbook_dir.py")
    try:
        return importlib.util.cache_from_source(source).removesuffix(".pyc") + ".runbooks"
    except (NotImplementedError, ValueError):
        return None


def _code_stamp() -> tuple[tuple[str, int, int], ...]:
    """Every gpubot module's (path, mtime_ns, size): about 350 stats, under 2 ms."""
    found: list[tuple[str, int, int]] = []
    pending = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # bot/
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    found.append((entry.path, st.st_mtime_ns, st.st_size))
    return tuple(sorted(found))


def load(key: SetKey) -> tuple[Any, list[str]] | None:
    """The set and its problems kept for ``key``, or None (missing, stale, foreign or damaged)."""
    path = cache_path()
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data.startswith(MAGIC):
        return None
    try:
        kept_key, stamp, rs, problems = pickle.loads(data[len(MAGIC):])  # noqa: S301 - see the docstring
    except Exception:  # noqa: BLE001 - a damaged or outdated file is only a miss
        return None
    if kept_key != key or stamp != _code_stamp():
        return None
    return rs, list(problems)


def save(key: SetKey, rs: Any, problems: list[str], *, always: bool = False) -> None:
    """Keep the set for ``key``, atomically; quietly not at all where the folder cannot be written."""
    path = cache_path()
    if path is None or (sys.dont_write_bytecode and not always):
        return
    write_beside_bytecode(path, MAGIC + pickle.dumps((key, _code_stamp(), rs, list(problems)), protocol=5))
