"""The one place gpubot reaches past Bolt's public API, so a Bolt upgrade breaks here or nowhere.

Bolt offers no public way to hand its single-team authorization the ``auth.test`` answer the bot
already has at start, so the first command would wait on a second ``auth.test``; warming it needs
the app's private middleware list. Everything else Socket Mode needs (the retry headers, the ack
envelope) is built here from slack-sdk's public types instead of Bolt's ``async_internals``.
tests/slack/test_bolt_adapter.py fails loudly when an upgrade takes away what this relies on;
pyproject.toml bounds slack-bolt and slack-sdk to the major versions that test passed on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.middleware.authorization.async_single_team_authorization import AsyncSingleTeamAuthorization
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_slack_response import AsyncSlackResponse

log = logging.getLogger("gpubot.slack.socket")


def warm_authorization(app: AsyncApp, auth_test: AsyncSlackResponse) -> bool:
    """Give the app's single-team authorization the bot's ``auth.test`` answer; False if none took it.

    Only an optimisation (without it the first request calls ``auth.test`` itself), so the product
    carries on when it returns False; the adapter's test does not.
    """
    warmed = False
    for middleware in getattr(app, "_async_middleware_list", None) or []:
        if isinstance(middleware, AsyncSingleTeamAuthorization):
            middleware.auth_test_result = auth_test
            warmed = True
    return warmed


def socket_mode_headers(req: SocketModeRequest) -> dict[str, str | Sequence[str]] | None:
    """The HTTP mode's retry headers for a Socket Mode envelope, so retries look the same to listeners."""
    headers: dict[str, str | Sequence[str]] = {}
    if req.retry_attempt is not None:
        headers["x-slack-retry-num"] = str(req.retry_attempt)
    if req.retry_reason is not None:
        headers["x-slack-retry-reason"] = req.retry_reason
    return headers or None


async def send_socket_mode_ack(client: AsyncBaseSocketModeClient, req: SocketModeRequest, resp: BoltResponse) -> None:
    """Ack the envelope with Bolt's response as its payload (JSON, else text); nothing when Bolt failed.

    A failed dispatch (status other than 200) is left unacked, as Bolt's own handler does, so that
    Slack redelivers the envelope.
    """
    if resp.status != 200:
        log.info("Bolt did not handle a Socket Mode envelope (status %s); left unacked", resp.status)
        return
    payload: dict[str, Any] | None = None
    if resp.body:
        content_type = (resp.headers.get("content-type") or [""])[0]
        payload = json.loads(resp.body) if content_type.startswith("application/json") else {"text": resp.body}
    await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id, payload=payload))
