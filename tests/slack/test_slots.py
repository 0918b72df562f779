"""The diagnosis limit: a place is taken on arrival, slots are handed on in arrival order, and a
command that gives up while queued leaves the line without taking or leaking a slot."""

from __future__ import annotations

import asyncio

import pytest

from bot.slack.slots import DiagnosisSlots


async def _hold(slots: DiagnosisSlots, name: str, order: list[str], release: asyncio.Event) -> None:
    ticket = slots.reserve()
    try:
        await ticket.granted()
        order.append(name)
        await release.wait()
    finally:
        ticket.release()


async def test_waiters_start_in_arrival_order_and_never_more_than_the_limit() -> None:
    slots = DiagnosisSlots(2)
    order: list[str] = []
    release = asyncio.Event()
    tasks = [asyncio.create_task(_hold(slots, f"c{i}", order, release)) for i in range(5)]
    await asyncio.sleep(0)
    assert order == ["c0", "c1"] and slots.running == 2
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert order == ["c0", "c1", "c2", "c3", "c4"]
    assert slots.running == 0


async def test_positions_count_the_line_and_a_cancelled_waiter_leaves_it() -> None:
    slots = DiagnosisSlots(1)
    held = slots.reserve()
    assert held.position is None
    second, third = slots.reserve(), slots.reserve()
    assert (second.position, third.position) == (1, 2)
    waiting = asyncio.create_task(second.granted())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    second.release()  # gave up before its turn: the slot goes past it
    assert slots.reserve().position == 2  # third and this newcomer are left in line
    held.release()
    await asyncio.wait_for(third.granted(), 5)
    third.release()
    third.release()  # idempotent
    assert slots.running == 1  # the newcomer got the slot third gave back


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        DiagnosisSlots(0)
