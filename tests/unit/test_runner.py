"""The runner's contract with checks: declared codes only, failures contained, order irrelevant."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

import pytest

from bot.commands import parse_invocation
from bot.engine.check import Check, Detection
from bot.engine.checks import builtin_checks
from bot.engine.checks.node_reachability import NODE_UNREACHABLE
from bot.engine.facts import Facts
from bot.engine.runbooks import load_runbooks
from bot.engine.runner import UndeclaredCode, run_checks
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario
from tests.scenarios.test_expect import ROOT


def _stray(facts: Facts) -> Iterator[Detection]:
    yield NODE_UNREACHABLE.detect("node/x", {"node": "x", "reason": "timeout", "via": "ssh"})


def _boom(facts: Facts) -> Iterator[Detection]:
    raise ValueError("a bug in a check")
    yield  # pragma: no cover


def _runbook(*checks: Check) -> object:
    rb = load_runbooks().diagnosis("why-pending")
    return dataclasses.replace(rb, checks={c.name: i for i, c in enumerate(checks)})


def test_an_undeclared_code_fails_in_strict_mode_and_is_dropped_otherwise(caplog: pytest.LogCaptureFixture) -> None:
    stray = Check("test.stray", (), ("POD_RUNNING",), _stray)
    facts = Facts(parse_invocation(["node-status"]))
    with pytest.raises(UndeclaredCode, match="NODE_UNREACHABLE"):
        run_checks(_runbook(stray), facts, {"test.stray": stray}, strict=True)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR):
        assert run_checks(_runbook(stray), facts, {"test.stray": stray}) == []  # type: ignore[arg-type]
    assert "undeclared code NODE_UNREACHABLE" in caplog.text


def test_a_check_that_raises_costs_only_itself() -> None:
    boom = Check("test.boom", (), ("POD_RUNNING",), _boom)
    facts = Facts(parse_invocation(["node-status"]))
    assert run_checks(_runbook(boom), facts, {"test.boom": boom}) == []  # type: ignore[arg-type]
    assert [(s.what, s.why) for s in facts.skipped] == [("check test.boom", "internal error (ValueError)")]


def test_a_check_resting_on_a_fact_not_needed_is_not_run_and_nothing_is_said_of_it() -> None:
    """The asked pod does not exist: the node list was not read (``Facts.no_subject``). A check on
    the nodes would conclude from an empty list; it is not run, and the report does not call the
    list unread (it was not needed)."""
    on_nodes = Check("test.on_nodes", ("nodes",), ("NODE_UNREACHABLE",), _stray)
    facts = Facts(parse_invocation(["why-pending", "p", "-n", "ml"]))
    facts.not_needed.add("nodes")
    facts.put("nodes", {})
    assert run_checks(_runbook(on_nodes), facts, {"test.on_nodes": on_nodes}) == []  # type: ignore[arg-type]
    assert facts.skipped == []


async def test_the_order_of_checks_in_a_runbook_does_not_change_the_report() -> None:
    """The old engine lost nvidia-smi evidence when two checks swapped places; facts make order moot."""
    runbooks = load_runbooks()
    rb = runbooks.diagnoses["why-pending"]
    reverse = dataclasses.replace(rb, checks=dict(reversed(list(rb.checks.items()))))
    reports = []
    for variant in (rb, reverse):
        runbooks.diagnoses["why-pending"] = variant
        async with SimCluster(load_scenario(ROOT / "scenarios" / "zombie-checkpoint.yaml")) as sim:
            service = Service(sim.settings(), runbooks=runbooks)
            try:
                report = await service.run(parse_invocation(["why-pending", "gpu-full-5d8c6-q7wz2", "-n", "ai"]))
            finally:
                await service.close()
        reports.append([(f.code, f.title, f.evidence) for f in report.findings])
    runbooks.diagnoses["why-pending"] = rb
    assert reports[0] == reports[1]
    assert reports[0][0][0] == "CHECKPOINT_ZOMBIE"


def test_every_builtin_check_reads_only_known_facts() -> None:
    from bot.engine.gather import FACT_NAMES

    for check in builtin_checks().values():
        assert set(check.reads) | set(check.refines) <= FACT_NAMES, check.name
        assert check.emits, check.name


def test_evidence_is_capped_in_lines_and_characters() -> None:
    from bot.engine.runner import MAX_EVIDENCE_CHARS, MAX_EVIDENCE_LINES, capped

    out = capped(["x" * 50_000_000] + [f"line {i}" for i in range(100)])
    assert len(out) == MAX_EVIDENCE_LINES
    assert len(out[0]) == MAX_EVIDENCE_CHARS and out[0].endswith("…")
    assert out[-1] == f"… {101 - MAX_EVIDENCE_LINES + 1} more line(s)"


def test_node_output_with_a_stray_byte_is_text_not_an_error() -> None:
    from bot.probes.ssh import MAX_OUTPUT_BYTES, _text

    assert _text(b"GPU-1, 0 \xff\xfe\n") == "GPU-1, 0 \ufffd\ufffd\n"
    assert len(_text(b"a" * (MAX_OUTPUT_BYTES + 10))) == MAX_OUTPUT_BYTES
