"""One fleet read per cluster, shared: every watch of a cluster sweeps from the same node-status.

A sweep's cost is the fleet's node reads (one SSH or agent round per GPU node, measured in
``bench/bench_watch_sweep.py``); the watcher's own work next to it is milliseconds. Two watches of
one cluster (two channels, or a sweep and a quiet-hours catch-up landing together) would each read
every node again. ``FleetReads`` runs at most one node-status per cluster at a time and hands its
report to every watch that can use it (one whose previous sweep ended before the read began);
only the last report per cluster is kept. Reports are read-only to their users.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.commands import Invocation
from bot.report import Report


class Diagnoses(Protocol):
    """What the watch needs of the diagnosis service."""

    async def run(self, inv: Invocation) -> Report: ...


@dataclass
class _Read:
    """A fleet-wide node-status in flight and when it began, so watches asking at the same time share
    it instead of reading every node again."""

    started: float
    task: asyncio.Task[Report]


class FleetReads:
    """node-status over a cluster's whole fleet, shared by the watches of that cluster.

    ``node_status(cluster, not_before=t)`` returns a report whose read *began* at or after ``t``
    (a watch passes the end of its own previous sweep, so it always sees what happened since):
    the read in flight or the last one when it began late enough, else a new one.
    """

    def __init__(self, service: Diagnoses, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.service = service
        self.clock = clock
        self._reads: dict[str, _Read] = {}
        #: fleet reads actually run (tests and the benchmark read it)
        self.reads = 0

    async def node_status(self, cluster: str, *, not_before: float = float("-inf")) -> Report:
        read = self._reads.get(cluster)
        if read is None or read.started < not_before or (read.task.done() and read.task.exception() is not None):
            read = _Read(self.clock(), asyncio.create_task(self._read(cluster), name=f"fleet read of {cluster}"))
            self._reads[cluster] = read
        # shielded: one caller cancelled (a stopping sweep) must not cancel the others' read
        return await asyncio.shield(read.task)

    async def _read(self, cluster: str) -> Report:
        self.reads += 1
        return await self.service.run(Invocation(command="node-status", cluster=cluster, surface="slack"))
