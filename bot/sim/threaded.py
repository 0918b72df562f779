"""Run an asyncio server on its own event loop in a background thread.

Synchronous clients (the official kubernetes client, kubectl subprocesses, paramiko-style
tools) must talk to the simulator from the test's thread, so the server needs a loop of its own.
Generic on purpose: anything with ``async start()`` and ``async stop()`` (the API server, the SSH
servers) can run here. It never touches the server's state except through ``call``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Startable(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=Startable)


class LoopThread:
    """A private event loop running forever in a daemon thread."""

    def __init__(self, name: str = "sim-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 30.0) -> T:
        """Run a coroutine on the loop and wait for its result from this (other) thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self.loop.is_running():
            self.loop.close()


class ThreadedServer:
    """Start/stop coroutine factories run on a LoopThread (for servers without a start/stop pair)."""

    def __init__(
        self,
        start_coro_factory: Any,
        stop_coro_factory: Any,
        *,
        name: str = "sim-loop",
    ) -> None:
        self._start = start_coro_factory
        self._stop = stop_coro_factory
        self._name = name
        self.thread: LoopThread | None = None

    def __enter__(self) -> ThreadedServer:
        self.thread = LoopThread(self._name)
        try:
            self.thread.call(self._start())
        except BaseException:
            self.thread.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.thread is not None
        try:
            self.thread.call(self._stop())
        finally:
            self.thread.close()


@contextmanager
def run_in_thread(server: S, *, name: str = "sim-loop") -> Iterator[S]:
    """``with run_in_thread(KubeApiServer(sc)) as srv: ...`` — started on entry, stopped on exit."""
    with ThreadedServer(server.start, server.stop, name=name):
        yield server
