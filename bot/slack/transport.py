"""How Slack reaches the app: Socket Mode (default) or HTTP (``POST /slack/events``).

Both modes also serve the health and metrics endpoints on ``http_port``. In HTTP mode Bolt's
request verification checks ``X-Slack-Signature`` and rejects stale timestamps before any
listener runs. Shutdown stops new work first, then gives in-flight answers a bounded time. This
module moves requests; it never interprets them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.request import SocketModeRequest

from bot.errors import ConfigError
from bot.observability import log_event
from bot.settings import Settings
from bot.slack.app import AFTER_ACK, Job, SlackBot
from bot.slack.bolt_adapter import send_socket_mode_ack, socket_mode_headers
from bot.slack.health import add_health_routes
from bot.slack.payloads import MalformedPayload, parse, shape_error
from bot.slack.web import CountingWebClient

log = logging.getLogger("gpubot.slack")

EVENTS_PATH = "/slack/events"
#: Slack payloads are small; refuse anything much larger before reading it
MAX_BODY = 256 * 1024


def check_slack_settings(settings: Settings) -> None:
    """Fail at start, naming the missing setting (never its value), if the mode cannot work."""
    problems = []
    if not settings.slack_bot_token:
        problems.append("GPUBOT_SLACK_BOT_TOKEN (the bot token, xoxb-…) is not set")
    elif not settings.slack_bot_token.get().startswith("xoxb-"):
        problems.append("GPUBOT_SLACK_BOT_TOKEN does not look like a bot token (it should start with xoxb-)")
    if settings.slack_mode == "socket":
        if not settings.slack_app_token:
            problems.append("Socket Mode needs GPUBOT_SLACK_APP_TOKEN (an app-level token, xapp-…)")
        elif not settings.slack_app_token.get().startswith("xapp-"):
            problems.append("GPUBOT_SLACK_APP_TOKEN does not look like an app-level token (xapp-…)")
    elif settings.slack_mode == "http" and not settings.slack_signing_secret:
        problems.append("HTTP mode needs GPUBOT_SLACK_SIGNING_SECRET to verify requests")
    if not 0 <= settings.http_port <= 65535:
        problems.append("setting http_port: must be between 0 and 65535")
    if problems:
        raise ConfigError("cannot start the Slack bot: " + "; ".join(problems))


class TimedSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, plus the ack latency metric."""

    def __init__(self, bot: SlackBot, app_token: str) -> None:
        super().__init__(bot.app, app_token, logger=logging.getLogger("gpubot.slack.socket"))
        self._bot = bot

    async def handle(self, client: Any, req: SocketModeRequest) -> None:
        start = time.time()
        problem = shape_error(req.payload) if isinstance(req.payload, dict) else "the payload is not a JSON object"
        if problem:
            # acked (an unacked envelope is redelivered) and dropped, in one line
            log_event(log, "malformed payload ignored", level=logging.WARNING, why=problem, mode="socket")
            await client.send_socket_mode_response({"envelope_id": req.envelope_id})
            return
        jobs: list[Job] = []
        bolt_req = AsyncBoltRequest(
            mode="socket_mode", body=req.payload, headers=socket_mode_headers(req), context={AFTER_ACK: jobs}
        )
        resp = await self.app.async_dispatch(bolt_req)
        try:
            await send_socket_mode_ack(client, req, resp)
        finally:
            # the work starts even when sending the ack failed: Slack then retries, and the retry
            # check (the first thing each job does) lets only one of them through
            self._bot.metrics.ack_seconds.observe(time.time() - start)
            self._bot.start_after_ack(jobs)


class SlackServer:
    """The running transports of one bot: an aiohttp site and, in Socket Mode, the WebSocket."""

    def __init__(self, bot: SlackBot, settings: Settings) -> None:
        self.bot = bot
        self.settings = settings
        self.socket: TimedSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        secret = settings.slack_signing_secret
        self._verifier = SignatureVerifier(secret.get()) if secret else None
        self._port = 0
        self.web_app = self._build()

    @property
    def port(self) -> int:
        """The bound port (useful when ``http_port`` is 0)."""
        return self._port

    def _build(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        checks = [self._service_ready, self._accepting, self._socket_up]
        add_health_routes(app, metrics=self.bot.metrics, checks=checks)
        if self.settings.slack_mode == "http":
            app.router.add_post(EVENTS_PATH, self._events)
        return app

    async def _events(self, request: web.Request) -> web.StreamResponse:
        start = time.monotonic()
        if not _well_formed_signature(request.headers):
            # Bolt would raise on a non-numeric timestamp (a 500 with a traceback); a forged or
            # mangled request is simply unauthenticated
            log_event(log, "rejected request", level=logging.WARNING, reason="malformed signature headers",
                      path=EVENTS_PATH)
            self.bot.metrics.rejected_signatures.inc()
            self.bot.metrics.ack_seconds.observe(time.monotonic() - start)
            return web.Response(status=401, text="invalid request")
        jobs: list[Job] = []
        body = await request.text()
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if self._verifier is not None and not self._verifier.is_valid(body, timestamp, signature):
            # checked here as well as in Bolt: an unsigned body must not reach the parsing below
            log_event(log, "rejected request", level=logging.WARNING, reason="signature", path=EVENTS_PATH)
            self.bot.metrics.rejected_signatures.inc()
            self.bot.metrics.ack_seconds.observe(time.monotonic() - start)
            return web.Response(status=401, text="invalid request")
        try:
            parse(body, request.content_type)
        except MalformedPayload as exc:
            log_event(log, "malformed payload refused", level=logging.WARNING, why=str(exc), path=EVENTS_PATH)
            self.bot.metrics.ack_seconds.observe(time.monotonic() - start)
            return web.json_response({"error": f"malformed payload: {exc}"}, status=400)
        bolt_req = AsyncBoltRequest(
            body=body, query=request.query_string, headers=dict(request.headers), context={AFTER_ACK: jobs}
        )
        bolt_resp = await self.bot.app.async_dispatch(bolt_req)
        if bolt_resp.status == 401:
            log_event(log, "rejected request", level=logging.WARNING, reason="signature", path=EVENTS_PATH)
            self.bot.metrics.rejected_signatures.inc()
        response = await to_aiohttp_response(bolt_resp)
        if bolt_resp.status == 404:
            # well formed, but nothing here handles it (a view_submission, a shortcut, a newer
            # type; logged by the app's error handler): Slack expects an empty 200 from an app
            # that ignores it, and retries a 404
            response = web.Response(status=200)
        # send the ack before any work starts, so a slow diagnosis can never delay it; the work
        # starts even if the client hung up while the ack was written (Slack may close at once,
        # or retry: the retry check, the first thing each job does, lets only one run)
        try:
            await response.prepare(request)
            await response.write_eof()
        except ConnectionResetError:
            log_event(log, "connection closed while the ack was sent", level=logging.DEBUG, path=EVENTS_PATH)
        finally:
            self.bot.metrics.ack_seconds.observe(time.monotonic() - start)
            self.bot.start_after_ack(jobs)
        return response

    async def _service_ready(self) -> tuple[bool, str]:
        return self.bot.service.ready(), "service"

    async def _accepting(self) -> tuple[bool, str]:
        return not self.bot.tasks.closing, "shutting-down"

    async def _socket_up(self) -> tuple[bool, str]:
        if self.socket is None:
            return True, "socket-mode"
        return await self.socket.client.is_connected(), "socket-mode"

    async def start(self) -> None:
        self._runner = web.AppRunner(self.web_app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.http_host, self.settings.http_port)
        try:
            await site.start()
        except OSError as exc:  # a port in use or not ours to bind is the operator's to fix, not a crash
            await self._runner.cleanup()
            where = f"{self.settings.http_host or '*'}:{self.settings.http_port}"
            raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}; another process may hold "
                              "the port: stop it or set http_port") from None
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self._port = sockets[0].getsockname()[1] if sockets else self.settings.http_port
        if self.settings.slack_mode == "socket":
            token = self.settings.slack_app_token.get()
            self.socket = TimedSocketModeHandler(self.bot, token)
            await self.socket.connect_async()
        log_event(log, "slack app started", mode=self.settings.slack_mode, port=self._port)

    async def stop(self, grace_s: float) -> int:
        """Stop taking commands, let in-flight answers finish (at most ``grace_s``), close all.

        Returns how many answers had to be cancelled.
        """
        if self.socket is not None:
            # no new envelopes; acks for a command already received were sent before this
            await self.socket.close_async()
        cancelled = await self.bot.drain(grace_s)
        if self._runner is not None:
            await self._runner.cleanup()
        if isinstance(self.bot.app.client, CountingWebClient):
            await self.bot.app.client.aclose()  # its kept connections to Slack, after the last answer
        log_event(log, "slack app stopped", cancelled=cancelled)
        return cancelled


def _well_formed_signature(headers: Mapping[str, str]) -> bool:
    """Both Slack signature headers present and shaped as Slack sends them (checked before Bolt)."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    return timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12 and signature.startswith("v0=")
