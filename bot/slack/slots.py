"""A first-come, first-served limit on the diagnoses ``serve`` runs at once.

Each diagnosis does its SSH packet handling, JSON decoding hand-offs, rendering and posting on the
one event loop that also sends every ack. Fifty at once stalled that loop for over half a second
(bench/bench_slack_ack.py), so only ``limit`` run together and the rest wait here in order of
arrival. The ack and the placeholder message never wait here; only the diagnosis does. A waiter
that gives up (shutdown) leaves the queue, or passes on a slot it was just handed.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Ticket:
    """One command's place: taken at once (in arrival order), granted when a slot is free."""

    def __init__(self, slots: DiagnosisSlots, waiter: asyncio.Future[None] | None, position: int | None) -> None:
        self._slots = slots
        self._waiter = waiter
        self._done = False
        #: its place in line when it arrived (1: next to start); ``None``: it started at once
        self.position = position

    async def granted(self) -> None:
        """Wait until this ticket holds a slot."""
        if self._waiter is not None:
            await asyncio.shield(self._waiter)

    def release(self) -> None:
        """Give the slot back, or leave the queue if it was never granted (idempotent)."""
        if self._done:
            return
        self._done = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.cancel()  # never granted: the queue skips it
            return
        self._slots._release()


class DiagnosisSlots:
    """At most ``limit`` holders at once; waiters are served strictly in arrival order."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._limit = limit
        self._running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def running(self) -> int:
        return self._running

    def reserve(self) -> Ticket:
        """Take a place now (no await, so arrival order is kept); ``release`` it when done."""
        if self._running < self._limit and not self._waiters:
            self._running += 1
            return Ticket(self, None, None)
        position = 1 + sum(1 for w in self._waiters if not w.done())
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return Ticket(self, waiter, position)

    def _release(self) -> None:
        """Hand the slot straight to the oldest live waiter (``running`` stays), or free it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._running -= 1
