"""Compile the methods ``@dataclass`` generates for gpubot's modules once, not in every process.

Why: ``dataclasses`` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and for a frozen
class ``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles it with ``exec``
while the module is imported. A ``gpubot why-pending`` defines about 140 dataclasses, 92 of them
frozen: some 700 compilations, about a fifth of the command's CPU before it reads anything
(imports-only process: 0.37 s of CPU without this, 0.29 s with it, measured side by side). The
text of a generated method depends only on the class's fields and options, so its compiled code
is the same in every process, like a module's bytecode.

``install`` gives the ``dataclasses`` module its own ``exec`` (a module global is found before the
builtin). For a class of a gpubot module, the code of a text seen before comes from a file beside
that module's bytecode (``__pycache__/NAME.cpython-311.dataclasses``, read on the module's first
dataclass); any other text is compiled as before, and at exit the module's file is rewritten
with exactly the texts this process used, where Python itself would write bytecode (not under
``PYTHONDONTWRITEBYTECODE``, not into a folder it may not write). A file carries the
interpreter's bytecode magic: another Python ignores it, as one that cannot be read is ignored.
Classes of other modules (the tests', third parties') are compiled as before. ``compile_all``
writes every module's file at once, as ``compileall`` writes bytecode (``python -m
bot.precompile`` runs it; scripts/test.sh, scripts/bench.sh and the Dockerfile run that after
``compileall``).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import sys
import types
from collections.abc import Callable
from typing import Any

#: the modules whose dataclass methods are kept: gpubot's own
PACKAGE = "bot"
#: the cache file's suffix, in place of ``.pyc``
SUFFIX = ".dataclasses"


class _ModuleCode:
    """One module's generated texts and their code: as read from its file, and as used now."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.cached = _read(path) if path is not None else {}
        self.used: dict[str, types.CodeType] = {}
        self.missed = False

    def code(self, text: str) -> types.CodeType:
        code = self.cached.get(text)
        if code is None:
            code = compile(text, "<string>", "exec")
            self.missed = True
        self.used[text] = code
        return code


_modules: dict[str, _ModuleCode] = {}


def _cache_path(module_globals: dict[str, Any]) -> str | None:
    """Where the module's file goes, beside its bytecode; None for a module without a source file."""
    source = module_globals.get("__file__")
    if not isinstance(source, str) or not source.endswith(".py"):
        return None
    try:
        return importlib.util.cache_from_source(source).removesuffix(".pyc") + SUFFIX
    except (NotImplementedError, ValueError):
        return None


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:
    """``exec`` for the ``dataclasses`` module: gpubot's generated methods compiled once."""
    name = globals.get("__name__") if isinstance(globals, dict) else None
    if isinstance(source, str) and isinstance(name, str) and (name == PACKAGE or name.startswith(PACKAGE + ".")):
        module = _modules.get(name)
        if module is None:
            module = _modules[name] = _ModuleCode(_cache_path(globals))  # type: ignore[arg-type]
        source = module.code(source)
    builtins.exec(source, globals, locals)  # noqa: S102 - what dataclasses itself does, with its own text


def _read(path: str) -> dict[str, types.CodeType]:
    """The texts and their code kept in ``path``, or {} where it is missing, foreign or damaged."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):
        return {}
    try:
        # the trust of a .pyc: gpubot's own folder, written by gpubot, checked for shape
        loaded = marshal.loads(data[len(magic):])  # noqa: S302
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, types.CodeType) for k, v in loaded.items()
    ):
        return {}
    return loaded


def _write(path: str, codes: dict[str, types.CodeType]) -> None:
    write_beside_bytecode(path, importlib.util.MAGIC_NUMBER + marshal.dumps(codes))


def write_beside_bytecode(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (processes exit side by side), readable like the
    bytecode beside it; quietly not at all where the folder cannot be written. What this module,
    ``bot.regex_code`` and ``bot.engine.runbook_cache`` keep is written so."""
    import tempfile  # only when something is written

    folder = os.path.dirname(path)
    with contextlib.suppress(OSError):
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)


def _save(*, always: bool = False) -> None:
    """Write the files of the modules that compiled something (``always``: even under
    ``PYTHONDONTWRITEBYTECODE``, as ``compileall`` writes bytecode when asked to)."""
    if sys.dont_write_bytecode and not always:
        return
    for module in list(_modules.values()):
        if module.missed and module.path is not None:
            _write(module.path, module.used)


def release() -> None:
    """Write what is new now and forget the texts: a long-running process (``gpubot serve``)
    calls this once its start-up imports are done, so the texts do not stay in its memory (about
    half a megabyte); a module imported later starts its own record."""
    _save()
    _modules.clear()


def import_all() -> None:
    """Import every gpubot module (those of an optional dependency not installed are left out)."""
    import importlib
    import pkgutil

    # this module's own folder is the package's: no import of the package from here (a cycle)
    for info in pkgutil.walk_packages([os.path.dirname(__file__)], PACKAGE + "."):
        if not info.name.endswith(".__main__"):
            with contextlib.suppress(ImportError):
                importlib.import_module(info.name)


def compile_all(import_everything: Callable[[], None] = import_all) -> int:
    """Import every gpubot module (through ``import_everything``) and write their files: what an
    installer runs after ``compileall`` (``python -m bot.precompile``), so that the first
    processes find them too. Returns how many modules have one."""
    import_everything()
    _save(always=True)
    return sum(1 for m in _modules.values() if m.path is not None and os.path.exists(m.path))


def install() -> None:
    """Give ``dataclasses`` the caching ``exec`` (once per process) and save new code at exit."""
    if getattr(dataclasses, "exec", None) is _exec:
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_save)
