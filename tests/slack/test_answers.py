"""What gets posted after the ack: long reports attach a file, failures say so without detail."""

from __future__ import annotations

import json

from bot.commands import Invocation
from bot.errors import UsageError
from bot.report import Finding, Report
from tests.slack.helpers import FakeService, form, post, running_app, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi


def _long_report() -> Report:
    report = Report(
        command="why-pending", target={"kind": "Pod", "name": "big", "namespace": "ai"}, cluster="sim"
    )
    for i in range(120):
        report.add(Finding(f"CODE_{i}", "warning", f"finding number {i}", evidence=["x" * 300]))
    return report


async def test_long_report_is_cut_and_attached_in_full(mock_slack: MockSlackApi) -> None:
    async with running_app(settings_for(mock_slack), FakeService(_long_report())) as app:
        body = form(slash_payload(mock_slack, "why-pending big -n ai"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: mock_slack.of("files.completeUploadExternal"))
    answer = mock_slack.of("chat.postMessage")[1]
    assert len(answer.body["blocks"]) <= 50
    assert "the full report is attached" in json.dumps(answer.body["blocks"])
    (get_url,) = mock_slack.of("files.getUploadURLExternal")
    assert get_url.body["filename"] == "gpubot-why-pending-big.txt"
    (upload,) = mock_slack.of("upload")
    assert int(get_url.body["length"]) == len(upload.raw)
    text = upload.raw.decode()
    assert all(f"CODE_{i}:" in text for i in range(120))
    (complete,) = mock_slack.of("files.completeUploadExternal")
    assert complete.body["channel_id"] == "C0GPU"
    assert complete.body["thread_ts"] == answer.body["thread_ts"]


class _Failing(FakeService):
    def __init__(self, exc: Exception) -> None:
        super().__init__()
        self.exc = exc

    async def run(self, inv: Invocation) -> Report:
        await super().run(inv)
        raise self.exc


async def test_service_usage_error_reaches_the_asker_and_the_placeholder(mock_slack: MockSlackApi) -> None:
    service = _Failing(UsageError("unknown runbook 'nope'; available: guide-a"))
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending p -n ai"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: mock_slack.of("response_url") and mock_slack.of("chat.update"))
        metrics = await _get(app.url + "/metrics")
    (reply,) = mock_slack.of("response_url")
    assert reply.body["response_type"] == "ephemeral" and "unknown runbook" in reply.body["text"]
    assert "unknown runbook" in json.dumps(mock_slack.of("chat.update")[0].body["blocks"])
    assert 'gpubot_commands_total{outcome="usage",subcommand="why-pending"} 1.0' in metrics


async def test_internal_error_is_reported_without_details(mock_slack: MockSlackApi) -> None:
    service = _Failing(RuntimeError("secret internal detail /etc/passwd"))
    async with running_app(settings_for(mock_slack), service) as app:
        body = form(slash_payload(mock_slack, "why-pending p -n ai"))
        await post(app.url + "/slack/events", body, sign(body))
        await mock_slack.wait_for(lambda: mock_slack.of("response_url") and mock_slack.of("chat.update"))
        metrics = await _get(app.url + "/metrics")
    posted = json.dumps([c.body for c in mock_slack.calls])
    assert "internal error" in posted and "secret internal detail" not in posted
    assert 'gpubot_commands_total{outcome="error",subcommand="why-pending"} 1.0' in metrics


async def _get(url: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return await resp.text()
