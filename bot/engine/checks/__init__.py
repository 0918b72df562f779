"""The built-in checks: one module each, found by listing this package.

A check module defines ``CHECK = Check(...)`` (see ``bot.engine.check``). Modules whose name
starts with ``_`` hold helpers several checks share and are not checks. Discovery imports the
modules and reads that one attribute: no decorator, no registration order, no side effects.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from bot.engine.check import Check


@cache
def builtin_checks() -> dict[str, Check]:
    """Every built-in check by name; a duplicate name or a module without CHECK is a packaging bug."""
    found: dict[str, Check] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        check = getattr(module, "CHECK", None)
        if not isinstance(check, Check):
            raise TypeError(f"{module.__name__} defines no CHECK = Check(...)")
        if check.name in found:
            raise ValueError(f"check {check.name!r} is defined twice")
        found[check.name] = check
    return found
