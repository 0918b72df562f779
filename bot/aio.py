"""Asyncio helpers for work that must end once started, whoever cancels its caller.

A restore after a failed kubelet step, and the record of how a run ended, must not be cut short
by a shutdown or a cancelled Slack handler: ``run_to_end`` shields such work, waits for it however
often the caller is cancelled meanwhile, and passes the cancellation on only afterwards.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
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


async def in_daemon_thread(fn: Callable[[], _T], timeout: float) -> _T:
    """``fn()`` in a daemon thread of its own, waited for at most ``timeout`` seconds.

    For blocking work that may never return (a kubeconfig exec plugin, which the client runs
    without a timeout): past ``timeout`` this raises ``TimeoutError`` and the thread is left
    behind, neither holding up the event loop's shutdown (the default executor is waited for)
    nor the process's exit.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(result: _T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name="gpubot-setup", daemon=True).start()
    return await asyncio.wait_for(done, max(timeout, 0.0))
