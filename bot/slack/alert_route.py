"""``POST /alerts``: Alertmanager's webhook on the bot's HTTP server, and how a group looks in Slack.

The route checks the token first (``Authorization: Bearer TOKEN``, or basic auth with TOKEN as
the password; compared in constant time, never logged), then reads at most the server's body
limit (larger: 413), parses the version 4 payload (anything else: 400 with a one-line reason) and
answers at once; the group's message is posted or edited in the background by
``bot.proactive.alerts.AlertDesk``, one group at a time. Nothing is posted for a refused request.
A replica that is not the leader answers 503 (after the token check), which Alertmanager retries.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import logging

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import log_event
from bot.proactive.alerts import AlertDesk, AlertGroup, AlertPayloadError, parse_payload
from bot.report import Report
from bot.settings import Secret
from bot.slack import limits as L
from bot.slack.blocks import Rendered, context, header, section, severity_marker
from bot.slack.tasks import TaskTracker

log = logging.getLogger("gpubot.alerts")

ALERTS_PATH = "/alerts"
_SHOWN_ALERTS = 15


def render_group(group: AlertGroup, diagnosis: Report | None) -> Rendered:
    """One message per alert group: what fires, what resolved, and the diagnosis of its target."""
    firing = group.firing()
    names = sorted({a.name for a in group.alerts})
    marker = "✅" if group.status == "resolved" else "🔥"
    state = "resolved" if group.status == "resolved" else f"{len(firing)} firing"
    title = f"{marker} {', '.join(names)}: {state} of {len(group.alerts)}"
    lines = []
    for alert in group.alerts[:_SHOWN_ALERTS]:
        where = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()) if k != "alertname")
        text = f"• {'🔥' if alert.status == 'firing' else '✅'} {alert.name} {where} {alert.summary}".rstrip()
        lines.append(L.escape_mrkdwn(text))
    if len(group.alerts) > _SHOWN_ALERTS:
        lines.append(f"… and {len(group.alerts) - _SHOWN_ALERTS} more")
    blocks = [header(title), section(L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT))]
    if diagnosis is not None:
        found = [f for f in diagnosis.findings if f.severity != "info"][:5]
        diag = [f"{severity_marker(f.severity)} {L.escape_mrkdwn(f.title)} `{f.code}`" for f in found]
        body = "\n".join(diag) or "no problem found"
        blocks.append(section(L.clip_lines(f"*gpubot {diagnosis.command}:*\n{body}", L.MAX_SECTION_TEXT)))
    blocks.append(context([f"Alertmanager group {L.escape_mrkdwn(L.clip(group.group_key, 200))}"]))
    return Rendered(blocks=blocks, text=L.clip(title, L.MAX_FALLBACK_TEXT))


class SlackAlertPoster:
    """Posts and edits alert-group messages through ``client``."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post_group(self, channel: str, group: AlertGroup, diagnosis: Report | None) -> str:
        msg = render_group(group, diagnosis)
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks)
        return str(resp["ts"])

    async def update_group(self, channel: str, ts: str, group: AlertGroup, diagnosis: Report | None) -> None:
        msg = render_group(group, diagnosis)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)


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
        body = await request.read()  # over the server's client_max_size: aiohttp answers 413
        try:
            group = parse_payload(body)
        except AlertPayloadError as exc:
            log_event(log, "alerts refused: malformed", level=logging.WARNING, why=str(exc))
            return web.json_response({"error": str(exc)}, status=400)
        tasks.spawn(deliver(group), name="alert-group")
        return web.json_response({"status": "accepted", "alerts": len(group.alerts)})

    app.router.add_post(ALERTS_PATH, on_alerts)
