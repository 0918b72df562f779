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
        #: tasks that may outlive the ordinary grace (a running remediation): their own limit
        self._grace: dict[asyncio.Task[Any], float] = {}
        self._closing = False

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def closing(self) -> bool:
        return self._closing

    def spawn(
        self, coro: Coroutine[Any, Any, Any], *, name: str, grace_s: float | None = None
    ) -> asyncio.Task[Any]:
        """Start ``coro``; ``grace_s``: shutdown waits this long for it (when longer than the
        ordinary grace) before cancelling it."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        if grace_s is not None:
            self._grace[task] = grace_s
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        self._grace.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def drain(self, timeout: float) -> int:
        """Stop taking work, wait up to ``timeout`` s for running tasks (a task spawned with a
        longer ``grace_s``: up to that), cancel the rest.

        A cancelled remediation restores what it changed before it ends; that is waited for too,
        within its grace. Returns how many tasks had to be cancelled.
        """
        self._closing = True
        pending = set(self._tasks)
        if not pending:
            return 0
        loop = asyncio.get_running_loop()
        start = loop.time()
        limit = {t: max(timeout, self._grace.get(t, 0.0)) for t in pending}
        cancelled = 0
        while pending:
            now = loop.time() - start
            overdue = {t for t in pending if limit[t] <= now}
            for task in overdue:
                task.cancel()
                cancelled += 1
            pending -= overdue
            if not pending:
                break
            _, pending = await asyncio.wait(pending, timeout=min(limit[t] for t in pending) - now)
        # what was cancelled gets a moment to finish its cleanup (a remediation: its restore)
        late = {t for t in self._tasks if not t.done()}
        if late:
            await asyncio.wait(late, timeout=max([1.0, *(self._grace.get(t, 0.0) for t in late)]))
        return cancelled
