"""Background work started after an ack, and the bookkeeping that lets shutdown wait for it.

A diagnosis outlives the request that asked for it (the ack goes back first), so nothing may be
fire-and-forget: every task is held here until done, its exceptions are logged, and ``drain``
gives in-flight answers a bounded time to be posted. It never starts work on its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class TaskTracker:
    """Holds strong references to background tasks and drains them on shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def closing(self) -> bool:
        return self._closing

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def drain(self, timeout: float) -> int:
        """Stop taking work, wait up to ``timeout`` s for running tasks, cancel the rest.

        Returns how many tasks had to be cancelled.
        """
        self._closing = True
        pending = set(self._tasks)
        if not pending:
            return 0
        _, still = await asyncio.wait(pending, timeout=timeout)
        for task in still:
            task.cancel()
        if still:
            await asyncio.wait(still, timeout=1.0)
        return len(still)
