"""Typed readers for scenario fields: the value as its type, or a problem naming where it is.

The scenario loader collects every problem of a file before it raises (``FILE: where: what``);
these readers let each field be read in one line without a ``int()`` or ``.items()`` that would
escape as a traceback ("internal error") on ``pid: abc`` or ``env: [a, b]``. A bad value is
described, never trusted: the reader records the problem and returns the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: ``problems.add``: (where, what)
Report = Callable[[str, str], None]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(value: Any, where: str, report: Report, default: int) -> int:
    """An integer (``3`` or ``3.0``); anything else is a problem."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    report(where, f"must be a whole number, got {_shown(value)}")
    return default


def number(value: Any, where: str, report: Report, default: float) -> float:
    """A number (int or float; not a boolean, not text)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    report(where, f"must be a number, got {_shown(value)}")
    return default


def flag(value: Any, where: str, report: Report, default: bool) -> bool:
    """``true`` or ``false`` (YAML booleans only: ``'yes'`` or ``'enabled'`` is a problem)."""
    if isinstance(value, bool):
        return value
    report(where, f"must be true or false, got {_shown(value)}")
    return default


def texts(value: Any, where: str, report: Report) -> list[str]:
    """A list of strings (a single string is a problem, never split into characters)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        report(where, f"must be a list of strings, got {_shown(value)}")
        return []
    return list(value)


def text_map(value: Any, where: str, report: Report) -> dict[str, str]:
    """A mapping of scalars, as strings."""
    if value is None:
        return {}
    if not isinstance(value, dict) or any(isinstance(v, dict | list) for v in value.values()):
        report(where, f"must be a mapping of names to values, got {_shown(value)}")
        return {}
    return {str(k): str(v) for k, v in value.items()}


def mapping(value: Any, where: str, report: Report) -> dict[str, Any]:
    """A mapping (absent = empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        report(where, f"must be a mapping, got {_shown(value)}")
        return {}
    return value
