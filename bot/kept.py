"""What a gpubot process derives from gpubot's own files, kept beside its bytecode for the next one.

Why: some start-up work gives the same answer until gpubot's code (or a file it reads) changes:
the validated built-in runbooks (``bot.engine.runbook_cache``, ~30 ms of every command) and the
RBAC permissions the code needs (``bot.doctor.needs``: an AST scan of every module, ~1.6 s of
every ``gpubot doctor``). Each is kept as a pickle (one per runbook directory for the runbooks),
with its key and the stamp of every gpubot module (path, mtime, size); any difference is a miss,
and the work is done as before.

A file lives in ``__pycache__`` beside the bytecode of the module named, and is written where
Python itself would write bytecode (not under ``PYTHONDONTWRITEBYTECODE``, not into a folder it
may not write), or always when asked (``python -m bot.precompile``, as an installer runs
``compileall``). Its trust is that of a ``.pyc``: gpubot's own folder, written by gpubot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pickle
import sys
from typing import Any

from bot.dataclass_code import write_beside_bytecode

#: the package root (bot/): what the code stamp covers
_PACKAGE = os.path.dirname(os.path.abspath(__file__))

CodeStamp = tuple[tuple[str, int, int], ...]


def code_stamp() -> CodeStamp:
    """Every gpubot module's (path, mtime_ns, size): about 350 stats, under 2 ms."""
    found: list[tuple[str, int, int]] = []
    pending = [_PACKAGE]
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


class KeptFile:
    """One kept result: ``__pycache__/<module>.<tag>[.<part>].<suffix>`` beside ``module_file``'s bytecode."""

    def __init__(self, module_file: str, suffix: str, version: int = 1) -> None:
        self.module_file = module_file
        self.suffix = suffix
        #: what the file starts with; another interpreter, layout or format version ignores it
        self.magic = importlib.util.MAGIC_NUMBER + f"gpubot-{suffix}-{version}\n".encode()

    def path(self, part: str = "") -> str | None:
        """Where the file goes (``part``: one of several such files, each with its own key);
        None where there is no such place."""
        try:
            base = importlib.util.cache_from_source(self.module_file).removesuffix(".pyc")
        except (NotImplementedError, ValueError):
            return None
        return f"{base}.{part}.{self.suffix}" if part else f"{base}.{self.suffix}"

    def load(self, key: Any, part: str = "") -> Any | None:
        """The value kept for ``key``, or None (missing, stale, foreign or damaged)."""
        path = self.path(part)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        if not data.startswith(self.magic):
            return None
        try:
            kept_key, stamp, value = pickle.loads(data[len(self.magic):])  # noqa: S301 - see the docstring
        except Exception:  # noqa: BLE001 - a damaged or outdated file is only a miss
            return None
        if kept_key != key or stamp != code_stamp():
            return None
        return value

    def save(self, key: Any, value: Any, part: str = "", *, always: bool = False) -> None:
        """Keep ``value`` for ``key``, atomically; quietly not at all where the folder cannot be written."""
        path = self.path(part)
        if path is None or (sys.dont_write_bytecode and not always):
            return
        write_beside_bytecode(path, self.magic + pickle.dumps((key, code_stamp(), value), protocol=5))
        if part:
            self._prune(path)

    def _prune(self, newest: str, keep: int = 8) -> None:
        """Keep the ``keep`` most recently written files of this kind: one per part is written only
        on a miss, and parts come and go (a test's temporary runbook directory, say)."""
        folder, name = os.path.split(newest)
        stem = name.rsplit(".", 2)[0] + "."
        with contextlib.suppress(OSError):
            siblings = [e for e in os.scandir(folder) if e.name.startswith(stem) and e.name.endswith("." + self.suffix)]
            siblings.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
            for old in siblings[keep:]:
                if old.path != newest:
                    os.unlink(old.path)
