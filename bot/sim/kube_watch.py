"""``watch=true`` streams: newline-delimited watch events, as the real API sends them.

The official client's ``watch.Watch().stream()`` and informers resume from a resourceVersion,
so the stream replays the store's history after that version and then follows live changes;
a version older than the kept history gets one ``ERROR`` event carrying a 410 Expired Status,
exactly like a real API server after etcd compaction. A watch only reads the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from bot.sim.kube_status import status_body
from bot.sim.store import Change, ObjectStore, ResourceType, dumps

#: the longest a watch stays open when the client gives no timeoutSeconds
DEFAULT_TIMEOUT_S = 1800.0
#: how often an idle watch checks that its client is still connected (aiohttp does not cancel it)
_LIVENESS_S = 2.0


def event_line(change: Change) -> bytes:
    return b'{"type":"' + change.type.encode() + b'","object":' + change.entry.raw + b"}\n"


class WatchHub:
    """Tracks open watch streams so that stopping the server ends them promptly."""

    def __init__(self) -> None:
        self.queues: set[asyncio.Queue[Change | None]] = set()

    def close_all(self) -> None:
        for queue in list(self.queues):
            queue.put_nowait(None)


async def serve_watch(
    request: web.Request,
    *,
    store: ObjectStore,
    hub: WatchHub,
    rtype: ResourceType,
    namespace: str | None,
    match: Callable[[dict[str, Any]], bool] | None,
    rv: int | None,
    timeout_s: float | None,
    count_bytes: Callable[[int], None],
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Change | None] = asyncio.Queue()

    def notify(change: Change) -> None:
        if change.rtype is rtype:
            loop.call_soon_threadsafe(queue.put_nowait, change)

    backlog, unsubscribe = store.watch_start(rtype, rv, notify)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)

    async def send(data: bytes) -> None:
        await response.write(data)
        count_bytes(len(data))

    def wanted(change: Change) -> bool:
        obj = change.entry.obj
        if namespace is not None and obj["metadata"].get("namespace") != namespace:
            return False
        return match is None or match(obj)

    if backlog is None:
        current = store.resource_version
        status = status_body(410, f"too old resource version: {rv} ({current})", reason="Expired")
        await send(b'{"type":"ERROR","object":' + dumps(status) + b"}\n")
        await response.write_eof()
        return response
    hub.queues.add(queue)
    try:
        for change in backlog:
            if wanted(change):
                await send(event_line(change))
        deadline = loop.time() + (timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S)
        while True:
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                got: Change | None = await asyncio.wait_for(queue.get(), min(left, _LIVENESS_S))
            except TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    break
                continue
            if got is None:
                break
            if wanted(got):
                await send(event_line(got))
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; nothing to clean beyond the finally
    finally:
        unsubscribe()
        hub.queues.discard(queue)
    return response
