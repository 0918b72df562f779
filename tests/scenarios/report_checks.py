"""What every diagnosis of a scenario's ``expect`` block must be, whichever way it was run:
test_expect (the CLI, node reads through the agent) and test_expect_readers (both readers, over SSH)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.registry import ACTIONS
from bot.sim.scenario import Expectation


def assert_report_contract(report: dict[str, Any]) -> None:
    """The JSON contract of a diagnosis (``--json``): its keys, each finding's fields and severity,
    no unfilled placeholder, and every button able to run (its action's parameters all bound)."""
    assert set(report) >= {"command", "target", "findings", "skipped", "elapsed_ms"}
    for f in report["findings"]:
        assert set(f) >= {
            "code",
            "severity",
            "title",
            "evidence",
            "explanation",
            "next_steps",
            "remediations",
        }
        assert f["severity"] in ("critical", "warning", "info")
        assert "{" not in f["title"], f"unfilled placeholder in {f['title']!r}"
        for offer in f["remediations"]:
            needed = ACTIONS[offer["action"]]
            assert needed <= set(offer["params"]), f"{f['code']}: {offer} lacks {needed - set(offer['params'])}"
            assert all(v and "{" not in v for v in offer["params"].values()), f"{f['code']}: unbound {offer}"


def assert_expected(path: Path, exp: Expectation, report: dict[str, Any]) -> None:
    """The scenario's expectation: its codes there, its absent ones not, its root cause first."""
    codes = [f["code"] for f in report["findings"]]
    missing = [c for c in exp.codes if c not in codes]
    unexpected = [c for c in exp.absent if c in codes]
    assert not missing, f"{path.name}: {exp.run}: missing {missing}; got {codes}"
    assert not unexpected, f"{path.name}: {exp.run}: must not report {unexpected}; got {codes}"
    if exp.first:
        assert codes and codes[0] in exp.first, f"{path.name}: {exp.run}: first must be one of {exp.first}; got {codes}"
