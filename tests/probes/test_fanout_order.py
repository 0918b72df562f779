"""observe_many starts the nodes named ``first`` before the others and answers in the asked order.

The transport here only records when each node's turn began: what is under test is the fan-out's
scheduling (which node takes a slot first), not a node read (tests/probes/test_node_probe.py and
test_ssh_pool.py read real simulated nodes over SSH).
"""

from __future__ import annotations

import asyncio

from bot.errors import NodeProbeError
from bot.probes.node import NodeObservation, observe_many


class RecordingTransport:
    name = "recording"

    def __init__(self, silent: set[str]) -> None:
        self.silent = silent
        self.started: list[str] = []

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        self.started.append(node)
        await asyncio.sleep(0)
        if node in self.silent:
            raise NodeProbeError(node, "timeout", "no answer")
        return NodeObservation(node=node)


async def test_first_nodes_take_the_first_slots_and_the_answer_keeps_the_order() -> None:
    nodes = [f"n{i}" for i in range(10)]
    transport = RecordingTransport(silent={"n8"})
    results = await observe_many(transport, nodes, concurrency=2, deadline=1.0, first=["n8", "n9"])
    assert transport.started[:2] == ["n8", "n9"]
    assert sorted(transport.started) == sorted(nodes)
    assert list(results) == nodes
    assert isinstance(results["n8"], NodeProbeError) and isinstance(results["n0"], NodeObservation)


async def test_without_first_the_asked_order_is_the_start_order() -> None:
    nodes = [f"n{i}" for i in range(5)]
    transport = RecordingTransport(silent=set())
    await observe_many(transport, nodes, concurrency=1, deadline=1.0)
    assert transport.started == nodes


async def test_each_answer_is_handed_on_as_it_comes_in_and_a_failing_handler_costs_nothing() -> None:
    nodes = [f"n{i}" for i in range(6)]
    transport = RecordingTransport(silent={"n3"})
    seen: list[tuple[str, int]] = []

    def answered(node: str, result: NodeObservation | NodeProbeError) -> None:
        seen.append((node, len(transport.started)))  # how many had started when this one came in
        if node == "n4":
            raise RuntimeError("a bug in the early work")

    results = await observe_many(transport, nodes, concurrency=2, deadline=1.0, answered=answered)
    assert sorted(n for n, _ in seen) == nodes
    assert seen[0][1] < len(nodes)  # the first answer was handed on while others had yet to start
    assert isinstance(results["n4"], NodeObservation) and isinstance(results["n3"], NodeProbeError)
