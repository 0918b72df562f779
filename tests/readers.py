"""The two readers a diagnosis can read the cluster through, for tests that must hold for both:
the direct API reader (the one-shot CLI) and the watch-fed cache (``gpubot serve``'s default)."""

from __future__ import annotations

from bot.service import Service
from bot.settings import Settings

READERS = ("direct", "cache")


async def service_reading(settings: Settings, reader: str) -> Service:
    """A service that reads through ``reader``; with the cache, once it has synced, so the answer
    comes from the cache and not from its fallback to the API."""
    service = Service(settings, use_cache=reader == "cache")
    if reader == "cache":
        cache = service.clients.cache_for("")
        assert cache is not None and await cache.wait_ready(30), "the watch-fed cache never synced"
    return service
