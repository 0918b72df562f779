"""Keep one SSH connection per node open between questions, for the long-running bot.

A fresh connection (TCP, key exchange, auth) is most of what a node probe costs; the bot asks
about the same GPU nodes again and again. Connections are reused only for an identical target
(same host, port, user, key and known_hosts, so the strict host-key check that admitted it still
applies), dropped after ``idle_s`` without use, and capped at ``max_size`` (least recently used
go first). The cap is above the GPU fleets the bot sweeps (node-status and the proactive sweep read
every GPU node each time): a cap below the fleet evicts in a cycle, so every sweep reconnects to
every node (key exchange and authentication on both ends) and the pool keeps nothing. A kept
connection costs a socket and some tens of kB. The one-shot CLI does not use a pool.

This module opens read connections only; what runs on them is still the probe's allow-list.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.probes.ssh import SshTarget

if TYPE_CHECKING:  # imported by bot.probes.ssh when a node is first reached
    import asyncssh

Connect = Callable[[SshTarget, float], Awaitable["asyncssh.SSHClientConnection"]]


class SshPool:
    """Reusable connections keyed by target."""

    def __init__(self, *, idle_s: float = 120.0, max_size: int = 4096) -> None:
        self.idle_s = idle_s
        self.max_size = max_size
        self._conns: OrderedDict[SshTarget, tuple[asyncssh.SSHClientConnection, float]] = OrderedDict()
        self._locks: dict[SshTarget, asyncio.Lock] = {}
        #: how many connections were opened (tests and benchmarks read it)
        self.opened = 0

    async def get(
        self, target: SshTarget, *, timeout: float, connect: Connect
    ) -> tuple[asyncssh.SSHClientConnection, bool]:
        """A live connection for ``target`` and whether it was reused (False = freshly opened)."""
        lock = self._locks.setdefault(target, asyncio.Lock())
        async with lock:  # two questions about one node open one connection, not two
            entry = self._conns.get(target)
            now = time.monotonic()
            if entry is not None:
                conn, last = entry
                if not conn.is_closed() and now - last < self.idle_s:
                    self._conns[target] = (conn, now)
                    self._conns.move_to_end(target)
                    return conn, True
                self._drop(target)
            conn = await connect(target, timeout)
            self.opened += 1
            self._conns[target] = (conn, now)
            while len(self._conns) > self.max_size:
                oldest = next(iter(self._conns))
                self._drop(oldest)
            return conn, False

    def holds(self, target: SshTarget) -> bool:
        """Whether a connection for ``target`` is kept (it may still turn out stale)."""
        entry = self._conns.get(target)
        return entry is not None and not entry[0].is_closed()

    def discard(self, target: SshTarget) -> None:
        """Forget (and close) the connection of ``target``: it failed and must not be reused."""
        self._drop(target)

    def _drop(self, target: SshTarget) -> None:
        entry = self._conns.pop(target, None)
        if entry is not None:
            entry[0].close()

    def __len__(self) -> int:
        return len(self._conns)

    async def close(self) -> None:
        conns = [conn for conn, _ in self._conns.values()]
        self._conns.clear()
        for conn in conns:
            conn.close()
        for conn in conns:
            await conn.wait_closed()
