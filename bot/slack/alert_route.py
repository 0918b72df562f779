"""``POST /alerts``: Alertmanager's webhook on the bot's HTTP server (the message: ``alert_messages``).

The route checks the token first (``Authorization: Bearer TOKEN``, or basic auth with TOKEN as
the password; compared in constant time, never logged), then streams the body in, up to
``MAX_BODY_BYTES`` (16 MiB, far above the server's 256 KiB for Slack: a valid alert storm is never
refused; beyond it 413, and the message names ``max_alerts``), parses the version 4 payload in a
worker thread (anything else: 400 with a one-line reason) and answers at once; the group's
message is posted or edited in the background by ``bot.proactive.alerts.AlertDesk``, one group
at a time. Nothing is posted for a refused request.
A replica that is not the leader answers 503 (after the token check), which Alertmanager retries.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import logging

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import log_event
from bot.proactive.alerts import MAX_BODY_BYTES, AlertDesk, AlertGroup, AlertPayloadError, parse_payload
from bot.report import Report
from bot.settings import Secret
from bot.slack.alert_messages import render_group
from bot.slack.history import find_posted, metadata
from bot.slack.tasks import TaskTracker

log = logging.getLogger("gpubot.alerts")

ALERTS_PATH = "/alerts"
#: the metadata event type of an alert group's message (an interrupted post is found by it)
ALERT_EVENT = "gpubot_alert_group"
_CHUNK = 256 * 1024
TOO_LARGE = (
    f"the body is over {MAX_BODY_BYTES // (1024 * 1024)} MiB; set max_alerts in the webhook_config "
    "so one group fits"
)


async def read_bounded(request: web.Request, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, streamed in chunks, or ``None`` once it is over ``limit`` bytes (the
    app-wide ``client_max_size`` is for Slack's small payloads; this route has its own bound)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    body = bytearray()
    async for chunk in request.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


class SlackAlertPoster:
    """Posts and edits alert-group messages through ``client``."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post_group(self, channel: str, group: AlertGroup, diagnosis: Report | None) -> str:
        msg = await asyncio.to_thread(render_group, group, diagnosis)  # a storm's counts: off the loop
        meta = metadata(ALERT_EVENT, group_post_key(group.group_key))
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks, metadata=meta)
        return str(resp["ts"])

    async def find_posted(self, channel: str, group_key: str) -> str | None:
        return await find_posted(self.client, channel, ALERT_EVENT, group_post_key(group_key))

    async def update_group(self, channel: str, ts: str, group: AlertGroup, diagnosis: Report | None) -> None:
        msg = await asyncio.to_thread(render_group, group, diagnosis)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)


def group_post_key(group_key: str) -> dict[str, str]:
    """The group's key in its message metadata: hashed (a group key can be long and holds labels)."""
    return {"group": hashlib.sha256(group_key.encode()).hexdigest()[:32]}


def authorized(header_value: str, token: Secret) -> bool:
    """Bearer TOKEN, or basic auth whose password is TOKEN (Alertmanager's two http_config forms)."""
    expected = token.get().encode()
    scheme, _, value = header_value.partition(" ")
    if scheme.lower() == "bearer":
        return hmac.compare_digest(value.strip().encode(), expected)
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(decoded.partition(b":")[2], expected)
    return False


def add_alert_route(app: web.Application, desk: AlertDesk, token: Secret, tasks: TaskTracker) -> None:
    """Serve ``POST /alerts`` on ``app`` (the bot's aiohttp server, before it starts)."""
    lock = asyncio.Lock()

    async def deliver(group: AlertGroup) -> None:
        async with lock:  # one group at a time: two payloads of a new group must not post twice
            await desk.receive(group)

    async def on_alerts(request: web.Request) -> web.Response:
        if not authorized(request.headers.get("Authorization", ""), token):
            log_event(log, "alerts refused: bad credentials", level=logging.WARNING)
            return web.json_response({"error": "unauthorized"}, status=401)
        if not desk.is_leader():  # another replica posts; Alertmanager retries a 5xx
            return web.json_response({"error": "not the leader replica; retry"}, status=503)
        body = await read_bounded(request)
        if body is None:
            log_event(log, "alerts refused: too large", level=logging.WARNING, limit=MAX_BODY_BYTES)
            return web.json_response({"error": TOO_LARGE}, status=413)
        try:
            # up to ~1 s for 16 MiB: off the loop, so Slack acks keep their tens of milliseconds
            group = await asyncio.to_thread(parse_payload, body)
        except AlertPayloadError as exc:
            log_event(log, "alerts refused: malformed", level=logging.WARNING, why=str(exc))
            return web.json_response({"error": str(exc)}, status=400)
        tasks.spawn(deliver(group), name="alert-group")
        return web.json_response({"status": "accepted", "alerts": len(group.alerts)})

    app.router.add_post(ALERTS_PATH, on_alerts)
