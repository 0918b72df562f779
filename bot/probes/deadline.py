"""The command's deadline, seen by every read made on its behalf.

``Service.run`` knows when the answer is due; the reads are several layers down, in loaders
that run concurrently and in a reader shared by every command of a long-running bot. The
deadline travels in a context variable (asyncio tasks copy it when they are created), so each
request can size its own timeout and its retries to what is left instead of to a fixed figure
that, times retries times pages, overran the command's deadline by many seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``time.monotonic()`` by which the current command must answer; None: no deadline
DEADLINE: ContextVar[float | None] = ContextVar("gpubot_deadline", default=None)


def remaining() -> float | None:
    """Seconds left before the current command's deadline (may be negative); None without one."""
    deadline = DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


@contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Run the block (and the tasks it creates) under ``deadline``."""
    token = DEADLINE.set(deadline)
    try:
        yield
    finally:
        DEADLINE.reset(token)
