"""Every built-in check has a unit test on hand-built Facts: a new check without one fails here."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from bot.engine.checks import builtin_checks

UNIT = Path(__file__).resolve().parents[1]


def test_every_check_is_run_on_facts_by_a_unit_test() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(UNIT.rglob("test_*.py")))
    missing = []
    for name, check in builtin_checks().items():
        module = inspect.getmodule(check.run)
        short = (module.__name__ if module else "").rsplit(".", 1)[-1]
        if f'"{name}"' not in text and not re.search(rf"\b{short}\.(CHECK\.)?run\(", text):
            missing.append(name)
    assert missing == [], "write a Facts-level test (tests/facts.py) for these checks"
