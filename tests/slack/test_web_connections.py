"""The bot keeps its connections to Slack open between calls.

slack_sdk opens a new session for each call made without one: a TCP connection, and against
slack.com a TLS handshake, for every ``chat.postMessage``, every ``chat.update`` and every
``response_url`` note. The bot's Web API client keeps one session per event loop (``LoopSession``),
which Bolt's per-request clients and the ``response_url`` posts share, and closes it when the app
stops. The mock Slack records the client port of each request: one port is one connection.
"""

from __future__ import annotations

from bot.slack.web import CountingWebClient, new_web_client, response_hook
from tests.slack.helpers import FakeService, form, post, running_app, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

ANSWERS = 6


async def test_answers_reuse_a_few_kept_connections(mock_slack: MockSlackApi) -> None:
    settings = settings_for(mock_slack)
    async with running_app(settings, FakeService()) as app:
        for n in range(1, ANSWERS + 1):
            body = form(slash_payload(mock_slack, "why-pending train-0 -n ai"))
            assert (await post(app.url + "/slack/events", body, sign(body)))[0] == 200
            await mock_slack.wait_for(lambda n=n: len(mock_slack.of("chat.update")) >= n, timeout=15)
        client = app.bot.app.client
        assert isinstance(client, CountingWebClient)
        session = client.session
    calls = [c for c in mock_slack.calls if c.method in ("chat.postMessage", "chat.update")]
    assert len(calls) >= 2 * ANSWERS
    # one answer at a time: the pool hands the same connection back (a new one per call before)
    assert len({c.peer for c in calls}) <= 2, sorted({c.peer for c in calls})
    assert session is not None and session.closed, "the app's stop closes its connections"


async def test_response_url_notes_share_the_clients_connections(mock_slack: MockSlackApi) -> None:
    client = new_web_client(settings_for(mock_slack))
    try:
        for i in range(5):
            resp = await response_hook(mock_slack.response_url(f"hook-{i}"), client).send(text=f"note {i}")
            assert resp.status_code == 200
        await client.chat_postMessage(channel="C1", text="and a post")
    finally:
        await client.aclose()
    peers = {c.peer for c in mock_slack.calls}
    assert len(mock_slack.calls) == 6 and len(peers) == 1, peers

