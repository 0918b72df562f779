"""Asyncio helpers for work that must end once started, whoever cancels its caller.

A restore after a failed kubelet step, and the record of how a run ended, must not be cut short
by a shutdown or a cancelled Slack handler: ``run_to_end`` shields such work, waits for it however
often the caller is cancelled meanwhile, and passes the cancellation on only afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

_T = TypeVar("_T")


async def run_to_end(work: Awaitable[_T]) -> _T:
    """Await ``work`` to its end even if this task is cancelled meanwhile, then re-raise the
    cancellation (if any). Work that raises, or is itself cancelled, raises here."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
