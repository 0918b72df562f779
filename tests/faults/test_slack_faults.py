"""8. Slack: retries that reach another replica, and a Web API that keeps refusing.

Before: retry de-duplication lived in one process's memory, so a retry answered by the other
replica ran the diagnosis twice; a timeout or a dropped connection on the Web API escaped as
"internal error" (62 of 200 commands when the API was slow), and a chat.update Slack still
refused after its retries left "diagnosing…" with no word to the user. Now the memory of
requests is in the shared state file, and every Web API failure falls back to something the
user sees (the command's response_url) and is counted in ``slack_api_failures_total``.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

from bot.observability import Metrics
from bot.slack.app import create_app
from bot.slack.transport import SlackServer
from bot.state.sqlite import SqliteDatabase
from bot.state.sqlite_requests import SqliteSeenRequests
from tests.slack.helpers import FakeService, form, post, running_app, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

COMMAND = "why-pending train-0 -n ai"


async def _replica(stack: AsyncExitStack, settings: object, seen: SqliteSeenRequests) -> tuple[str, FakeService]:
    service = FakeService()
    bot = create_app(settings, service, metrics=Metrics(), seen=seen)  # type: ignore[arg-type]
    server = SlackServer(bot, settings)  # type: ignore[arg-type]
    await bot.start()
    await server.start()
    stack.push_async_callback(server.stop, 1.0)
    return f"http://127.0.0.1:{server.port}/slack/events", service


async def test_a_retry_answered_by_the_other_replica_runs_nothing_twice(
    slack_api: MockSlackApi, tmp_path: Path
) -> None:
    settings = settings_for(slack_api, state_path=str(tmp_path / "state.db"))
    seen_a = SqliteSeenRequests(SqliteDatabase(settings.state_path))
    seen_b = SqliteSeenRequests(SqliteDatabase(settings.state_path))
    try:
        async with AsyncExitStack() as stack:
            url_a, service_a = await _replica(stack, settings, seen_a)
            url_b, service_b = await _replica(stack, settings, seen_b)
            body = form(slash_payload(slack_api, COMMAND))
            assert (await post(url_a, body, sign(body)))[0] == 200
            # Slack thought the ack was lost and retries; the load balancer picks the other replica
            assert (await post(url_b, body, {**sign(body), "X-Slack-Retry-Num": "1"}))[0] == 200
            await slack_api.wait_for(lambda: service_a.runs or service_b.runs)
            await slack_api.wait_for(lambda: len(slack_api.of("chat.update")) >= 1, timeout=15)
            assert len(service_a.runs) + len(service_b.runs) == 1
            other = form(slash_payload(slack_api, COMMAND))  # a new command is not a retry
            assert (await post(url_b, other, sign(other)))[0] == 200
            await slack_api.wait_for(lambda: service_b.runs)
    finally:
        seen_a.close()
        seen_b.close()


async def test_dropped_connections_to_the_web_api_fall_back_to_response_url(slack_api: MockSlackApi) -> None:
    slack_api.disconnect["chat.postMessage"] = 100  # every post dropped, retries included
    async with running_app(settings_for(slack_api), FakeService()) as app:
        body = form(slash_payload(slack_api, COMMAND))
        assert (await post(app.url + "/slack/events", body, sign(body)))[0] == 200
        await slack_api.wait_for(lambda: len(slack_api.of("response_url")) >= 2, timeout=30)
        metrics = app.bot.metrics.exposition()[0].decode()
    notes = [c.body for c in slack_api.of("response_url")]
    assert not [n for n in notes if "internal error" in json.dumps(n)]
    assert notes[-1]["response_type"] == "in_channel"
    # the answer arrived (the report, then its evidence page)
    assert any("kubelet checkpoint holds devices" in json.dumps(n.get("blocks")) for n in notes)
    assert len(slack_api.of("chat.postMessage")) >= 3  # the client retried before giving up
    assert 'slack_api_failures_total{method="chat.postMessage"}' in metrics


async def test_an_update_slack_keeps_refusing_is_told_to_the_asker(slack_api: MockSlackApi) -> None:
    slack_api.rate_limited["chat.update"] = 100  # 429 on every try, beyond the client's retries
    async with running_app(settings_for(slack_api), FakeService()) as app:
        body = form(slash_payload(slack_api, COMMAND))
        assert (await post(app.url + "/slack/events", body, sign(body)))[0] == 200
        await slack_api.wait_for(lambda: slack_api.of("response_url"), timeout=30)
        await slack_api.wait_for(lambda: len(app.bot.tasks) == 0, timeout=30)
        metrics = app.bot.metrics.exposition()[0].decode()
    [note] = [c.body for c in slack_api.of("response_url")]
    assert note["response_type"] == "ephemeral"
    assert 'did not accept the update of the \\"diagnosing' in json.dumps(note) and "thread" in json.dumps(note)
    assert len(slack_api.of("chat.update")) == 4  # the first try and three retries per Retry-After
    assert 'slack_api_failures_total{method="chat.update"} 1.0' in metrics


