"""Socket Mode: the real SDK client connects to a local WebSocket, acks envelopes, posts answers."""

from __future__ import annotations

import json

import aiohttp

from tests.slack.helpers import APP_TOKEN, BOT_TOKEN, FakeService, running_app, settings_for, slash_payload
from tests.slack.mock_slack_api import MockSlackApi


def _envelope(mock: MockSlackApi, text: str, envelope_id: str, *, retry: int = 0) -> dict:
    return {
        "envelope_id": envelope_id,
        "type": "slash_commands",
        "accepts_response_payload": True,
        "retry_attempt": retry,
        "retry_reason": "timeout" if retry else "",
        "payload": slash_payload(mock, text),
    }


async def test_socket_mode_acks_the_envelope_and_posts_the_answer(mock_slack: MockSlackApi) -> None:
    service = FakeService()
    async with running_app(settings_for(mock_slack, mode="socket"), service) as app:
        opened = mock_slack.of("apps.connections.open")
        assert len(opened) == 1 and opened[0].token == APP_TOKEN
        assert mock_slack.socket_connections == 1
        async with aiohttp.ClientSession() as session, session.get(app.url + "/readyz") as resp:
            assert resp.status == 200
        envelope = _envelope(mock_slack, "why-pending train-0 -n ai", "env-1")
        await mock_slack.send_envelope(envelope)
        ack = await mock_slack.wait_for(
            lambda: [a for a in mock_slack.socket_acks if a["envelope_id"] == "env-1"]
        )
        assert "payload" not in ack[0] or not ack[0]["payload"]

        # Slack re-sends an envelope it thinks was lost: acked again, not run again
        retry = {**envelope, "envelope_id": "env-1b", "retry_attempt": 1, "retry_reason": "timeout"}
        await mock_slack.send_envelope(retry)
        await mock_slack.wait_for(lambda: [a for a in mock_slack.socket_acks if a["envelope_id"] == "env-1b"])
        await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))

        # malformed input: the usage line comes back in the ack itself
        await mock_slack.send_envelope(_envelope(mock_slack, "nvml", "env-2"))
        bad = await mock_slack.wait_for(
            lambda: [a for a in mock_slack.socket_acks if a["envelope_id"] == "env-2"]
        )
        metrics = await _get(app.url + "/metrics")
    assert bad[0]["payload"]["response_type"] == "ephemeral"
    assert "usage: /gpu nvml POD" in bad[0]["payload"]["text"]
    assert len(service.runs) == 1
    progress, answer, details = mock_slack.of("chat.postMessage")
    assert progress.token == BOT_TOKEN and answer.token == BOT_TOKEN
    assert details.body["thread_ts"] == "1700000000.000001"
    assert "diagnosing pod ai/train-0" in progress.body["text"]
    assert "kubelet checkpoint holds devices" in json.dumps(answer.body["blocks"])
    assert answer.body["thread_ts"] == "1700000000.000001"
    assert "gpubot_slack_ack_seconds_count 3.0" in metrics
    assert 'gpubot_slack_duplicates_ignored_total{kind="command"} 1.0' in metrics


async def _get(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return await resp.text()
