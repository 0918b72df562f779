"""What bot/slack/bolt_adapter.py relies on in Bolt is still there (run this first on an upgrade).

The warm-up reaches into Bolt's private middleware list: if an upgrade renames it, the product
silently falls back to a second ``auth.test`` on the first command, and this test fails instead.
No other module may reach past Bolt's public API.
"""

from __future__ import annotations

import ast
from pathlib import Path

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.bolt_adapter import socket_mode_headers, warm_authorization
from tests.slack.helpers import BOT_TOKEN, form, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

BOT = Path(__file__).resolve().parents[2] / "bot"
#: Bolt's private attributes that gpubot has needed
PRIVATE_NAMES = frozenset({"_async_middleware_list", "_middleware_list"})


def _private_uses(path: Path) -> list[int]:
    """Lines importing a Bolt ``internals`` module or naming a private Bolt attribute."""
    text = path.read_text(encoding="utf-8")
    if not any(word in text for word in (*PRIVATE_NAMES, "internals")):
        return []  # none of the words any such line holds: no need to parse it (most modules)
    lines = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("slack_bolt"):
            if "internals" in (node.module or ""):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_NAMES:
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_NAMES:
            lines.append(node.lineno)  # getattr(app, "_async_middleware_list")
    return lines


async def test_a_warmed_app_answers_its_first_command_without_a_second_auth_test(mock_slack: MockSlackApi) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=mock_slack.api_url)
    app = AsyncApp(client=client, request_verification_enabled=False, process_before_response=True)

    @app.command("/gpu")
    async def gpu(ack: AsyncAck) -> None:
        await ack("ok")

    assert warm_authorization(app, await client.auth_test()), (
        "Bolt no longer exposes its single-team authorization middleware: update bot/slack/bolt_adapter.py"
    )
    body = form(slash_payload(mock_slack, "help"))
    headers = {"content-type": ["application/x-www-form-urlencoded"]}
    resp = await app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
    assert resp.status == 200 and resp.body == "ok"
    assert len(mock_slack.of("auth.test")) == 1


def test_socket_mode_retries_carry_the_http_retry_headers() -> None:
    from slack_sdk.socket_mode.request import SocketModeRequest

    req = SocketModeRequest(type="slash_commands", envelope_id="e", payload={}, retry_attempt=2, retry_reason="timeout")
    assert socket_mode_headers(req) == {"x-slack-retry-num": "2", "x-slack-retry-reason": "timeout"}
    assert socket_mode_headers(SocketModeRequest(type="slash_commands", envelope_id="e", payload={})) is None


def test_only_the_adapter_reaches_past_bolts_public_api() -> None:
    offenders = [
        f"{path.relative_to(BOT.parent)}:{n}"
        for path in sorted(BOT.rglob("*.py"))
        if path.name != "bolt_adapter.py"
        for n in _private_uses(path)
    ]
    assert not offenders, offenders
