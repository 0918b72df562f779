"""Compile the regular expressions gpubot's modules and their libraries define once, not per process.

Why: ``re`` parses a pattern and generates its matcher code in Python, and a module's patterns
are compiled while it is imported. A cold ``gpubot why-pending`` compiled about 220 of them,
about 40 ms of a process that takes about 0.4 s (urllib3's URL grammar, PyYAML's reader, the
scheduler-message and GPU-health grammars). The generated code depends only on the pattern,
its flags and the interpreter, so it can be kept like bytecode: ``_sre.compile``, the C
constructor ``re`` itself ends with, builds the same pattern object from it directly.

``record_all`` (run by ``python -m bot.precompile``, as an installer runs ``compileall``)
imports every gpubot module with a recorder in place and writes what ``re`` generated to
``bot/__pycache__/regex.<tag>.sre``. ``install`` (from ``bot/__init__``) reads that file once and
gives ``re`` a ``compile`` step that takes a kept pattern from it; any other pattern, or any
file written by another interpreter (its bytecode magic, ``_sre.MAGIC`` and version are in the
header), is compiled as before. Its trust is that of a ``.pyc``: gpubot's own folder, written by gpubot.
"""

from __future__ import annotations

import _sre
import contextlib
import importlib.util
import marshal
import os
import re
import re._compiler as sre_compiler
import sys
from collections.abc import Callable
from typing import Any

#: what the file starts with: another interpreter, or another ``re`` engine, ignores it
HEADER = importlib.util.MAGIC_NUMBER + f"sre {_sre.MAGIC} {sys.version}\n".encode()
#: (pattern, flags) -> the rest of ``_sre.compile``'s arguments
Kept = dict[tuple[str | bytes, int], tuple[Any, ...]]

_original_compile: Callable[..., re.Pattern[Any]] = sre_compiler.compile
_kept: Kept = {}


def cache_path() -> str | None:
    """``bot/__pycache__/regex.<tag>.sre``; None where there is no bytecode folder."""
    source = os.path.join(os.path.dirname(__file__), "__init__.py")
    try:
        return importlib.util.cache_from_source(source).replace("__init__.", "regex.").removesuffix(".pyc") + ".sre"
    except (NotImplementedError, ValueError):
        return None


def _kept_compile(p: Any, flags: int = 0) -> re.Pattern[Any]:
    """``re._compiler.compile`` for ``re._compile``: a kept pattern from its generated code."""
    args = _kept.get((p, flags)) if isinstance(p, str | bytes) else None
    if args is not None:
        with contextlib.suppress(Exception):  # a damaged entry is compiled as before
            return _sre.compile(p, *args)  # type: ignore[no-any-return]
    return _original_compile(p, flags)


def _read(path: str) -> Kept:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    if not data.startswith(HEADER):
        return {}
    try:
        loaded = marshal.loads(data[len(HEADER):])  # noqa: S302 - see the module docstring
    except (EOFError, ValueError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def install() -> None:
    """Read the kept patterns (once per process) and let ``re`` use them."""
    if sre_compiler.compile is _kept_compile:
        return
    path = cache_path()
    _kept.update(_read(path) if path else {})
    if _kept:
        sre_compiler.compile = _kept_compile


def record_all(import_everything: Callable[[], None]) -> int:
    """Run ``import_everything`` recording each pattern ``re`` generates code for, and write the
    file with exactly those. Returns how many patterns the file holds."""
    path = cache_path()
    if path is None:
        return 0
    recorded: Kept = {}
    current: list[tuple[str | bytes, int]] = []
    original_sre = _sre.compile

    def recording_compile(p: Any, flags: int = 0) -> re.Pattern[Any]:
        current.append((p, flags))
        try:
            return _original_compile(p, flags)
        finally:
            current.pop()

    def recording_sre(pattern: Any, flags: int, code: list[int], groups: int, groupindex: Any, indexgroup: Any) -> Any:
        if current and current[-1][0] is pattern and not current[-1][1] & re.DEBUG:
            # the opcodes are int subclasses (named constants), which marshal does not keep
            opcodes = [int(op) for op in code]
            recorded[current[-1]] = (int(flags), opcodes, int(groups), dict(groupindex), tuple(indexgroup))
        return original_sre(pattern, flags, code, groups, groupindex, indexgroup)

    sre_compiler.compile, _sre.compile = recording_compile, recording_sre
    try:
        re.purge()  # every pattern compiled from here on goes through the recorder
        import_everything()
    finally:
        sre_compiler.compile, _sre.compile = _original_compile, original_sre
    _write(path, recorded)
    return len(recorded)


def _write(path: str, kept: Kept) -> None:
    from bot.dataclass_code import write_beside_bytecode  # at precompile time only

    write_beside_bytecode(path, HEADER + marshal.dumps(kept))
