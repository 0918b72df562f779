"""observe_many starts the nodes named ``first`` before the others and answers in the asked order.

The transport here only records when each node's turn began: what is under test is the fan-out's
scheduling (which node takes a slot first), not a node read (tests/probes/test_node_probe.py and
test_ssh_pool.py read real simulated nodes over SSH).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.errors import NodeProbeError
from bot.probes.node import MIN_HOLD_S, NodeObservation, fair_hold, observe_many, observe_with
from bot.probes.ssh import COMBINED_READ, CommandResult


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


class HungTransport:
    """Hung nodes answer nothing until their own deadline; healthy ones answer at once."""

    name = "hung"

    def __init__(self, hung: set[str]) -> None:
        self.hung = hung

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        if node in self.hung:
            await asyncio.sleep(deadline)
            raise NodeProbeError(node, "timeout", f"no complete answer within {deadline:g}s")
        await asyncio.sleep(0.01)
        return NodeObservation(node=node)


def _arranged(arrangement: str, total: int, hung: int) -> tuple[list[str], set[str]]:
    nodes = [f"n{i:02d}" for i in range(total)]
    if arrangement == "first":
        return nodes, set(nodes[:hung])
    if arrangement == "last":
        return nodes, set(nodes[-hung:])
    return nodes, set(nodes[:: total // hung][:hung])  # spread evenly


@pytest.mark.parametrize("arrangement", ["first", "last", "spread"])
async def test_hung_nodes_cannot_starve_healthy_ones_whatever_their_order(arrangement: str) -> None:
    """60 nodes, 20 of them silent until their own 2 s deadline, 4 slots, 3 s for everything.

    Holding a slot until its deadline, the hung nodes would need 20 / 4 x 2 s = 10 s of slots
    before the healthy ones behind them got a turn; yielding a slot after a fair share of the
    time left, every healthy node is read within the 3 s, and every hung one is reported.
    """
    nodes, hung = _arranged(arrangement, 60, 20)
    assert len(hung) == 20
    until = time.monotonic() + 3.0
    results = await observe_many(HungTransport(hung), nodes, concurrency=4, deadline=2.0, until=until)
    unread_healthy = [n for n in nodes if n not in hung and not isinstance(results[n], NodeObservation)]
    assert unread_healthy == []
    assert all(isinstance(results[n], NodeProbeError) for n in hung)


def test_the_fair_hold_shares_the_time_left_among_the_nodes_waiting() -> None:
    assert fair_hold(10.0, 4, 0) == 10.0  # nobody waits: keep the slot
    assert fair_hold(10.0, 4, 40) == 1.0
    assert fair_hold(1.0, 4, 400) == MIN_HOLD_S


class ReadingTransport:
    """Nodes read through ``observe_with``, each command answered at once and logged."""

    name = "reading"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        async def run(commands: list[str]) -> dict[str, CommandResult]:
            self.log.append(f"read {node}")
            await asyncio.sleep(0)
            # the combined read fails (an old shell): the commands are run one by one, as asked
            code = 1 if commands == [COMBINED_READ] else 0
            return {c: CommandResult("", "", code) for c in commands}

        return await observe_with(run, node)


async def test_a_node_frees_its_slot_once_its_reads_are_in_not_once_its_answer_is_parsed() -> None:
    """One slot: the second node's read starts before the first node's answer is parsed and
    handed on (parsing is the bot's CPU, not a read the slot bounds)."""
    log: list[str] = []
    results = await observe_many(ReadingTransport(log), ["a", "b"], concurrency=1, deadline=1.0,
                                 answered=lambda node, _: log.append(f"answered {node}"))
    assert log.index("read b") < log.index("answered a")
    assert max(i for i, e in enumerate(log) if e == "read a") < log.index("read b")  # a's reads all came first
    assert all(isinstance(r, NodeObservation) for r in results.values())


async def test_answers_that_come_in_together_are_parsed_one_per_turn_of_the_loop() -> None:
    """Four nodes whose reads end in the same turn: their answers are parsed (and handed on) one
    per turn of the event loop, in order, so the turns between them are free for the reads'
    own events. Counted by a ticker that advances once a turn."""
    turns = 0
    ticking = True

    async def ticker() -> None:
        nonlocal turns
        while ticking:
            turns += 1
            await asyncio.sleep(0)

    seen: list[tuple[str, int]] = []
    tick = asyncio.create_task(ticker())
    try:
        await observe_many(ReadingTransport([]), ["a", "b", "c", "d"], concurrency=4, deadline=1.0,
                           answered=lambda node, _: seen.append((node, turns)))
    finally:
        ticking = False
        await tick
    assert [node for node, _ in seen] == ["a", "b", "c", "d"]
    at = [turn for _, turn in seen]
    assert all(later > earlier for earlier, later in zip(at, at[1:], strict=False)), seen


async def test_a_cancelled_read_gives_its_parse_turn_to_the_next() -> None:
    """A node read cancelled while it waits for its parse turn (the command's deadline) does not
    hold up the nodes behind it."""
    from bot.probes.node import _OnePerTurn

    turns = _OnePerTurn()
    first = asyncio.ensure_future(turns.turn())
    second = asyncio.ensure_future(turns.turn())
    first.cancel()
    await asyncio.wait_for(second, 1.0)
    assert first.cancelled()
