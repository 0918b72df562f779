"""Remembering recent requests so a Slack retry never runs a diagnosis (or an action) twice.

Slack re-sends a request it thinks was not acknowledged (``X-Slack-Retry-Num``, or a Socket Mode
envelope with ``retry_attempt``); the payload is the same, so its trigger id or body hash is a
good key. A retry may reach another replica, so ``RequestDedupe`` asks this process's memory
first (bounded by a TTL and a size cap) and then the state store every replica shares; if the
store cannot answer, memory decides (a rare duplicate answer beats a lost one). This module only
remembers; it never decides what to do with a duplicate.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

log = logging.getLogger(__name__)

#: Slack retries within minutes; ten covers every retry schedule it documents
DEFAULT_TTL_S = 600.0
DEFAULT_MAX_KEYS = 10000


class RecentKeys:
    """A TTL set: ``first(key)`` is True only the first time a key is seen within the TTL."""

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl_s
        self._max = max_keys
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first(self, key: str) -> bool:
        now = self._clock()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at < self._ttl and len(self._seen) < self._max:
                break
            self._seen.popitem(last=False)
        if key in self._seen:
            return False
        self._seen[key] = now
        return True


class SharedKeys(Protocol):
    """Keys seen by any process (``bot.state.contracts.SeenRequests``); may block."""

    def first(self, key: str) -> bool: ...


class RequestDedupe:
    """This process's memory, then the shared store: ``await first(key)`` is True once per key."""

    def __init__(self, shared: SharedKeys | None = None, *, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.local = RecentKeys(ttl_s)
        self.shared = shared

    async def first(self, key: str) -> bool:
        if not self.local.first(key):
            return False
        if self.shared is None:
            return True
        try:
            return await asyncio.to_thread(self.shared.first, key)
        except Exception as exc:  # noqa: BLE001 - a store hiccup must never lose a request
            log.warning("shared retry memory unavailable (%s); this process's memory decides", type(exc).__name__)
            return True


def request_key(kind: str, body: Mapping[str, Any]) -> str:
    """A key that is equal for a request and its retries and different for two real requests."""
    for field in ("trigger_id", "response_url"):
        value = body.get(field)
        if isinstance(value, str) and value:
            return f"{kind}:{field}:{value}"
    digest = hashlib.sha256(repr(sorted(body.items())).encode("utf-8")).hexdigest()
    return f"{kind}:sha256:{digest}"
