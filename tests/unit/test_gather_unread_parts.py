"""When the node readings are not taken as a whole, every node they would have read is named.

The node loader names each unread node itself when it runs (its own deadline, the transport's
error). Two ways it never gets to: the command's deadline cancels it (a read that ignores the
deadline, a machine so loaded that the loader is still running), or a fact it rests on could not be
read. Before, both left one line ("node readings: not finished ...") or none, and node-status showed
300 rows "not checked" with no node named (issue 29, F9).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, cast

import pytest

from bot.engine.facts import Facts
from bot.engine.gather import LOADERS, Sources, gather
from bot.report import DEADLINE_SKIP, NODE_READ_SKIP
from tests.facts import facts, node, pod, slim

BASE = ("target", "nodes", "components", "node_pods")


async def _never(facts: Facts, sources: Sources) -> None:
    await asyncio.sleep(3600)


def _named(f: Facts) -> dict[str, str]:
    return {s.what.removeprefix(f"{NODE_READ_SKIP} "): s.why for s in f.skipped if s.what.startswith(NODE_READ_SKIP)}


def _gather(f: Facts, monkeypatch: pytest.MonkeyPatch, fn: Any = _never, deadline_s: float = 0.05) -> None:
    monkeypatch.setitem(LOADERS, "node_readings", dataclasses.replace(LOADERS["node_readings"], fn=fn))
    monkeypatch.setattr("bot.engine.gather.GRACE_S", 0.0)
    f.deadline = time.monotonic() + deadline_s
    asyncio.run(gather(f, cast(Sources, _Sources()), ["node_readings"]))


class _Sources:
    """What gather itself touches of its sources: the progress line."""

    def progress(self, text: str) -> None:
        pass


def test_readings_cancelled_at_the_deadline_name_every_node_of_node_status(monkeypatch: pytest.MonkeyPatch) -> None:
    f = facts("node-status", nodes=[node("g1"), node("g2"), node("g3"), node("cpu", gpu=None)], only=BASE)
    _gather(f, monkeypatch)
    assert _named(f) == {"g1": DEADLINE_SKIP, "g2": DEADLINE_SKIP, "g3": DEADLINE_SKIP}
    assert "node_readings" in f.unreadable and f.node_readings == {}
    assert not [s for s in f.skipped if s.what == "node readings"], "the nodes, not one line for all"


def test_readings_cancelled_for_a_pending_pod_name_the_candidates_it_would_have_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes = [node(f"g{i}") for i in range(6)]
    waiting = pod("train", gpu=1)
    f = facts(pod=waiting, nodes=nodes, node_pods={"g4": [slim("busy", "g4", gpu=8)]}, only=BASE)
    f.ssh_concurrency = 2
    _gather(f, monkeypatch)
    named = _named(f)
    assert len(named) == 2 and "g4" in named, named  # the most allocated first, as the reads would be
    assert set(named.values()) == {DEADLINE_SKIP}


def test_readings_resting_on_unread_pods_name_each_node_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    f = facts("node-status", nodes=[node("g1"), node("g2")], only=BASE)
    f.cannot_read("node_pods")
    _gather(f, monkeypatch, deadline_s=5.0)
    assert _named(f) == dict.fromkeys(["g1", "g2"], "not read: it rests on pods on GPU nodes, which could not be read")


def test_no_node_is_named_when_the_nodes_themselves_could_not_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    f = facts("node-status", nodes=[node("g1")], only=BASE)
    f.cannot_read("nodes")
    _gather(f, monkeypatch, deadline_s=5.0)
    assert _named(f) == {} and "node_readings" in f.unreadable


def test_a_failed_loader_names_every_node_with_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(facts: Facts, sources: Sources) -> None:
        raise RuntimeError("boom")

    f = facts("node-status", nodes=[node("g1"), node("g2")], only=BASE)
    _gather(f, monkeypatch, fn=broken, deadline_s=5.0)
    assert _named(f) == dict.fromkeys(["g1", "g2"], "internal error (RuntimeError)")
