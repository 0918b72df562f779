"""``gpubot serve``: the long-running Slack bot, from settings to graceful shutdown.

Order matters: check the configuration (fail fast, naming what is missing but never a value),
turn on JSON logs that redact every secret, build the service and the app, verify the bot token,
start the transports and the periodic offer sweep, then wait for SIGTERM/SIGINT, stop the sweep
and drain in-flight diagnoses within ``shutdown_grace_s``. This module wires parts together; it
holds no Slack or diagnosis logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable

from bot.observability import Metrics, configure_logging, log_event
from bot.settings import Settings
from bot.slack.app import create_app
from bot.slack.hooks import DiagnosisService, RemediateHook, RemediationOffers
from bot.slack.transport import SlackServer, check_slack_settings

log = logging.getLogger("gpubot.server")


async def serve(
    settings: Settings,
    *,
    service: DiagnosisService | None = None,
    offers: RemediationOffers | None = None,
    on_remediate: RemediateHook | None = None,
    sweep: Callable[[], Awaitable[object]] | None = None,
    stop: asyncio.Event | None = None,
    started: asyncio.Future[SlackServer] | None = None,
    configure_logs: bool = True,
) -> None:
    """Run the bot until SIGTERM/SIGINT (or ``stop`` is set).

    ``service`` defaults to ``bot.service.Service(settings)``. ``sweep`` (the remediation
    layer's expiry of unclicked offers) runs every ``offer_sweep_interval_s`` until shutdown.
    ``started`` (tests) receives the running server, e.g. to learn the bound port. Raises
    ``ConfigError`` on bad settings.
    """
    check_slack_settings(settings)
    if configure_logs:
        configure_logging(
            settings.log_level,
            secrets=[settings.slack_bot_token, settings.slack_app_token, settings.slack_signing_secret],
        )
    if service is None:
        from bot.service import Service

        service = Service(settings, use_cache=True, keep_connections=True)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    bot = create_app(settings, service, metrics=Metrics(), offers=offers, on_remediate=on_remediate)
    server = SlackServer(bot, settings)
    sweeper: asyncio.Task[None] | None = None
    try:
        await bot.start()
        await server.start()
        if sweep is not None:
            sweeper = asyncio.create_task(sweep_periodically(sweep, settings.offer_sweep_interval_s, stop))
        if started is not None and not started.done():
            started.set_result(server)
        await stop.wait()
        log_event(log, "shutting down", in_flight=len(bot.tasks), grace_s=settings.shutdown_grace_s)
        await server.stop(settings.shutdown_grace_s)
    finally:
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        for sig in installed:
            loop.remove_signal_handler(sig)
        await service.close()
        session = getattr(bot.app.client, "session", None)
        if session is not None and not session.closed:
            await session.close()


async def sweep_periodically(
    sweep: Callable[[], Awaitable[object]], interval_s: float, stop: asyncio.Event
) -> None:
    """Call ``sweep`` every ``interval_s`` until ``stop`` is set; a failed sweep is logged, and
    the next one tries again (an expiry missed now is caught up then)."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
        if stop.is_set():
            return
        try:
            await sweep()
        except Exception:
            log.exception("offer sweep failed")
