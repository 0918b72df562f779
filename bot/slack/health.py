"""``/healthz``, ``/readyz`` and ``/metrics`` for Kubernetes probes and Prometheus.

Liveness only says the event loop answers; readiness says the bot can take commands now (the
service has warmed up, the Slack connection is up, no shutdown is in progress). These handlers
read state; they never change it and never show configuration.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from bot.observability import Metrics

#: each check returns (ok, name); all must pass for /readyz to answer 200
ReadyCheck = Callable[[], Awaitable[tuple[bool, str]]]


def add_health_routes(app: web.Application, *, metrics: Metrics, checks: Sequence[ReadyCheck]) -> None:
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        failing = []
        for check in checks:
            ok, name = await check()
            if not ok:
                failing.append(name)
        if failing:
            return web.json_response({"status": "not ready", "failing": failing}, status=503)
        return web.json_response({"status": "ready"})

    async def metrics_handler(_request: web.Request) -> web.Response:
        body, content_type = metrics.exposition()
        # aiohttp wants the charset separately from the media type
        media, _sep, params = content_type.partition(";")
        charset = "utf-8" if "charset" in params else None
        return web.Response(body=body, content_type=media.strip(), charset=charset)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_handler)
