"""``gpubot serve``: the long-running Slack bot, from settings to graceful shutdown.

Order matters: check the configuration (fail fast, naming what is missing but never a value),
turn on JSON logs that redact every secret, build the service and the app, verify the bot token,
start the transports, then wait for SIGTERM/SIGINT and drain in-flight diagnoses within
``shutdown_grace_s``. This module wires parts together; it holds no Slack or diagnosis logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

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
    stop: asyncio.Event | None = None,
    started: asyncio.Future[SlackServer] | None = None,
    configure_logs: bool = True,
) -> None:
    """Run the bot until SIGTERM/SIGINT (or ``stop`` is set).

    ``service`` defaults to ``bot.service.Service(settings)``. ``started`` (tests) receives the
    running server, e.g. to learn the bound port. Raises ``ConfigError`` on bad settings.
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
    try:
        await bot.start()
        await server.start()
        if started is not None and not started.done():
            started.set_result(server)
        await stop.wait()
        log_event(log, "shutting down", in_flight=len(bot.tasks), grace_s=settings.shutdown_grace_s)
        await server.stop(settings.shutdown_grace_s)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await service.close()
        session = getattr(bot.app.client, "session", None)
        if session is not None and not session.closed:
            await session.close()
