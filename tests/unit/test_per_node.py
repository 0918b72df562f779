"""Checks' per-node parts: worked out as a node answers, taken at the end only for that very reading."""

from __future__ import annotations

from typing import Any

from bot.commands import parse_invocation
from bot.engine.facts import Facts
from bot.engine.per_node import EARLY_PER_NODE, EarlyParts, PerNode, of_api, parts_of
from bot.errors import NodeProbeError
from bot.probes.observation import NodeObservation


def _facts(*argv: str) -> Facts:
    return Facts(parse_invocation(["node-status", *argv]))


def _counting(calls: list[str]) -> PerNode[tuple[str, int]]:
    @PerNode
    def part(facts: Facts, node: str, reading: NodeObservation) -> tuple[str, int]:
        calls.append(node)
        return (node, len(reading.notes))

    return part


def _early(facts: Facts, parts: list[PerNode[Any]], *readings: object) -> EarlyParts:
    early = EarlyParts(facts, parts)
    for reading in readings:
        early.answered(getattr(reading, "node", "?"), reading)
    facts.put(EARLY_PER_NODE, early.done)
    return early


def test_the_value_worked_out_as_the_node_answered_is_taken_for_that_very_reading() -> None:
    calls: list[str] = []
    part = _counting(calls)
    facts, a, b = _facts(), NodeObservation("a"), NodeObservation("b")
    _early(facts, [part], a, b, NodeProbeError("c", "timeout", "no answer"))
    assert calls == ["a", "b"], "worked out as each node answered; a failed read has no reading to work from"
    first = part(facts, "a", a)
    assert part(facts, "a", a) is first and calls == ["a", "b"], "taken, not worked out again"


def test_a_reading_added_to_after_the_fan_out_or_another_reading_is_worked_out_afresh() -> None:
    calls: list[str] = []
    part = _counting(calls)
    facts, a, b = _facts(), NodeObservation("a"), NodeObservation("b")
    _early(facts, [part], a, b)
    a.notes.append("kubelet state from the Lease")
    a.revise()
    assert part(facts, "a", a) == ("a", 1) and calls[-1] == "a"
    other = NodeObservation("b", notes=["read again"])
    assert part(facts, "b", other) == ("b", 1) and calls[-1] == "b"
    assert part(facts, "z", NodeObservation("z")) == ("z", 0), "a node not worked out early"


def test_without_early_values_the_part_is_the_function_itself() -> None:
    calls: list[str] = []
    part = _counting(calls)
    facts, a = _facts(), NodeObservation("a")
    assert part(facts, "a", a) == ("a", 0) and part(facts, "a", a) == ("a", 0)
    assert calls == ["a", "a"]


def test_an_api_part_stands_whatever_the_reading_and_is_worked_out_only_where_asked() -> None:
    calls: list[str] = []

    @of_api(asked=lambda facts: not facts.inv.kind)
    def examined(facts: Facts, node: str, _reading: object) -> str:
        calls.append(node)
        return f"examined {node}"

    facts, a = _facts(), NodeObservation("a")
    _early(facts, [examined], a)
    assert calls == ["a"]
    assert examined(facts, "a", None) == "examined a" and calls == ["a"], "its reading does not matter"

    pending = Facts(parse_invocation(["why-pending", "p", "-n", "ns"]))
    assert _early(pending, [examined], NodeObservation("a")).done == {}, "not asked for in this question"
    assert calls == ["a"]


def test_a_part_that_cannot_be_worked_out_early_is_worked_out_at_the_end() -> None:
    @PerNode
    def reads_every_node(facts: Facts, node: str, reading: NodeObservation) -> int:
        return len(facts.node_readings)  # not gathered while the nodes are read

    facts, a = _facts(), NodeObservation("a")
    early = _early(facts, [reads_every_node], a)
    assert early.done == {}
    facts.put("node_readings", {"a": a, "b": NodeObservation("b")})
    assert reads_every_node(facts, "a", a) == 2


def test_the_parts_of_a_runbooks_checks_each_once_in_order() -> None:
    from bot.engine.runner import builtin_checks

    checks = builtin_checks()
    parts = parts_of(checks[name] for name in ("health.gpus", "leak.triage", "health.gpus", "sched.events"))
    assert parts == [*checks["health.gpus"].per_node, *checks["leak.triage"].per_node]
    assert all(isinstance(p, PerNode) for p in parts)
