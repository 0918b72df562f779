"""End to end: Alertmanager webhooks on ``POST /alerts`` of the running bot, over real HTTP.

The real bot (``build_bot``) with the simulated leak cluster behind it and the recording mock
Web API: one message per alert group however many alerts it holds, edited as they resolve,
enriched with node-status for the labelled node; refused requests (bad credentials, malformed,
too large) post nothing and the token never reaches a log.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.proactive.alerts import MAX_BODY_BYTES
from bot.settings import Settings
from bot.sim.cluster import SimCluster
from bot.wiring import Bot, build_bot
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import Call, MockSlackApi

LEAK = Path(__file__).resolve().parents[2] / "scenarios" / "leak.yaml"
CHANNEL = "C0ALERTS"
TOKEN = "am-webhook-token-5f3c9e0a77"


GROUP = '{}:{alertname="DCGMXidError"}'


def payload(status: str, alerts: list[dict[str, Any]], *, group: str = GROUP) -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": group,
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "gpubot",
        "groupLabels": {"alertname": "DCGMXidError"},
        "commonLabels": {"alertname": "DCGMXidError", "Hostname": "gpu-a"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": alerts,
    }


def xid(gpu: int, status: str = "firing") -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "DCGMXidError", "Hostname": "gpu-a", "gpu": str(gpu)},
        "annotations": {"summary": f"Xid 79 on GPU {gpu}"},
        "startsAt": "2026-05-07T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": f"{gpu:016x}",
    }


async def send(bot: Bot, body: bytes, auth: str | None = f"Bearer {TOKEN}") -> tuple[int, str]:
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    url = f"http://127.0.0.1:{bot.server.port}/alerts"
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
        return resp.status, await resp.text()


def posts(mock: MockSlackApi) -> list[Call]:
    return [c for c in mock.of("chat.postMessage") if c.body.get("channel") == CHANNEL]


def _settings(mock: MockSlackApi, sim: SimCluster) -> Settings:
    return settings_for(mock, base=sim.settings(), alerts_token=TOKEN, alerts_channel=CHANNEL)


async def test_one_message_per_group_edited_when_it_resolves(
    mock_slack: MockSlackApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        bot = build_bot(_settings(mock_slack, sim))
        await bot.start()
        try:
            firing = json.dumps(payload("firing", [xid(i) for i in range(20)])).encode()
            assert (await send(bot, firing))[0] == 200
            (posted,) = await mock_slack.wait_for(lambda: posts(mock_slack))
            await mock_slack.wait_for(lambda: len(bot.slack.tasks) == 0)
            assert (await send(bot, firing))[0] == 200  # Alertmanager repeats a group: nothing new
            await mock_slack.wait_for(lambda: len(bot.slack.tasks) == 0)
            assert len(posts(mock_slack)) == 1 and not mock_slack.of("chat.update")
            text = json.dumps(posted.body["blocks"], ensure_ascii=False)
            assert posted.body["blocks"][0]["text"]["text"] == "🔥 DCGMXidError: 20 firing of 20"
            assert "Xid 79 on GPU 0" in text and "… and 5 more" in text
            assert "gpubot node-status" in text and "`LEAK_LOGICAL_NOT_PHYSICAL`" in text  # the node's diagnosis

            resolved = json.dumps(payload("resolved", [xid(i, "resolved") for i in range(20)])).encode()
            assert (await send(bot, resolved))[0] == 200
            (update,) = await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
            assert len(posts(mock_slack)) == 1
            ts = next(ts for (ch, ts), m in mock_slack.messages.items() if ch == CHANNEL)
            assert update.body["ts"] == ts
            assert mock_slack.message(CHANNEL, ts)["blocks"][0]["text"]["text"] == "✅ DCGMXidError: resolved of 20"
        finally:
            await bot.server.stop(5)
            await bot.close()
    assert TOKEN not in caplog.text


async def test_refused_requests_post_nothing(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        bot = build_bot(_settings(mock_slack, sim))
        await bot.start()
        try:
            good = json.dumps(payload("firing", [xid(0)])).encode()
            wrong_basic = "Basic " + base64.b64encode(b"alertmanager:nope").decode()
            for auth in (None, "Bearer nope", f"Bearer {TOKEN}x", wrong_basic, "Basic %%%", TOKEN):
                status, _ = await send(bot, good, auth)
                assert status == 401, auth
            for body, why in (
                (b"{not json", "not JSON"),
                (json.dumps({**payload("firing", [xid(0)]), "version": "3"}).encode(), "version 4"),
                (json.dumps(payload("firing", [])).encode(), "alerts"),
                (json.dumps({**payload("firing", [xid(0)]), "groupKey": 7}).encode(), "groupKey"),
                (json.dumps(payload("firing", [{"status": "firing", "labels": {"a": 1}}])).encode(), "labels"),
                (b"[]", "object"),
            ):
                status, text = await send(bot, body)
                assert status == 400 and why in json.loads(text)["error"], text
                assert "\n" not in json.loads(text)["error"]
            huge = b'{"version": "4", "pad": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
            status, text = await send(bot, huge)
            assert status == 413 and "max_alerts" in json.loads(text)["error"]
            assert len(bot.slack.tasks) == 0 and posts(mock_slack) == []

            basic = "Basic " + base64.b64encode(f"alertmanager:{TOKEN}".encode()).decode()
            assert (await send(bot, good, basic))[0] == 200  # basic auth with the token as password
            await mock_slack.wait_for(lambda: posts(mock_slack))
        finally:
            await bot.server.stop(5)
            await bot.close()


def storm(count: int, *, group: str, pad: int = 0) -> bytes:
    """A group of ``count`` alerts over 300 nodes and 3 names, as big as a real storm's."""
    names = ("DCGMXidError", "GPUFellOffBus", "NodeNotReady")
    alerts = [
        {
            "status": "firing" if n % 10 else "resolved",
            "labels": {"alertname": names[n % 3], "Hostname": f"gpu-{n % 300:03d}", "gpu": str(n % 8),
                       "severity": "critical", "job": "dcgm-exporter"},
            "annotations": {"summary": f"Xid 79 on GPU {n % 8}", "description": "x" * pad,
                            "runbook_url": "https://runbooks.example/xid79"},
            "startsAt": "2026-05-07T10:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS%20%3E%200",
            "fingerprint": f"{n:016x}",
        }
        for n in range(count)
    ]
    body = {**payload("firing", alerts, group=group), "commonLabels": {"severity": "critical"}}
    return json.dumps(body).encode()


async def test_an_alert_storm_is_accepted_and_posted_as_one_summary(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    """2,000 alerts (~700 KiB) and an 8 MiB group: 200 and one summarised message each (they were
    413 and lost: Alertmanager does not retry a 4xx)."""
    two_thousand = storm(2000, group="{}:{storm=\"a\"}")
    eight_mib = storm(8000, group="{}:{storm=\"b\"}", pad=700)
    assert 600 * 1024 < len(two_thousand) < 1024 * 1024 and len(eight_mib) > 8 * 1024 * 1024
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        bot = build_bot(_settings(mock_slack, sim))
        await bot.start()
        try:
            for body, count in ((two_thousand, 2000), (eight_mib, 8000)):
                status, text = await send(bot, body)
                assert status == 200 and json.loads(text)["alerts"] == count, text
            await mock_slack.wait_for(lambda: len(posts(mock_slack)) == 2 and len(bot.slack.tasks) == 0)
            assert len(posts(mock_slack)) == 2
            by_size = sorted(posts(mock_slack), key=lambda c: int(c.body["text"].rsplit(" ", 1)[1]))
            for post, count in zip(by_size, (2000, 8000), strict=True):
                blocks = post.body["blocks"]
                text = json.dumps(blocks, ensure_ascii=False)
                firing = count - count // 10
                assert post.body["text"] == f"🔥 DCGMXidError, GPUFellOffBus, NodeNotReady: {firing} firing of {count}"
                assert f"{count} alerts in one group" in text and "*By alert name* (3)" in text
                assert "*By node* (300)" in text and "… and 290 more nodes" in text
                assert f"*First 20 of {count}*" in text and "http" not in text  # no runbook/generator links
                assert len(blocks) <= 50 and len(text) < 24000
        finally:
            await bot.server.stop(5)
            await bot.close()


async def test_alert_data_never_pings_from_the_notification_or_the_blocks(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    """Issue 29 F4: the alert name reached the notification ``text`` as ``🔥 <!channel> Xid <@U0BOSS>``."""
    hostile = "<!channel> Xid <@U0BOSS> <http://evil|docs>"
    alert = {"status": "firing", "labels": {"alertname": hostile, "Hostname": "gpu-a"},
             "annotations": {"summary": hostile}}
    body = {**payload("firing", [alert], group=hostile), "commonLabels": {"alertname": hostile}}
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        bot = build_bot(_settings(mock_slack, sim))
        await bot.start()
        try:
            assert (await send(bot, json.dumps(body).encode()))[0] == 200
            (posted,) = await mock_slack.wait_for(lambda: posts(mock_slack))
        finally:
            await bot.server.stop(5)
            await bot.close()
    assert posted.body["text"] == "🔥 &lt;!channel&gt; Xid &lt;@U0BOSS&gt; &lt;http://evil|docs&gt;: 1 firing of 1"
    mrkdwn = [json.dumps(b) for b in posted.body["blocks"] if b["type"] != "header"]
    assert all("<" not in m for m in mrkdwn) and any("&lt;!channel&gt;" in m for m in mrkdwn)


async def test_a_stop_between_posting_a_group_and_recording_it_does_not_post_it_again(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    """The group's message reached Slack, the process stopped before its ts was written: the
    next delivery (Alertmanager repeats a group) finds it in the channel and edits it."""
    firing = json.dumps(payload("firing", [xid(0)])).encode()
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = _settings(mock_slack, sim)
        first = build_bot(settings)
        await first.start()
        hold = mock_slack.stall["chat.postMessage"] = asyncio.Event()
        try:
            assert (await send(first, firing))[0] == 200
            await mock_slack.wait_for(lambda: posts(mock_slack))
        finally:
            await first.server.stop(0.1)  # the delivery is cancelled while Slack holds its answer
            del mock_slack.stall["chat.postMessage"]
            hold.set()
            await first.close()
        second = build_bot(settings)
        await second.start()
        try:
            assert (await send(second, firing))[0] == 200
            await mock_slack.wait_for(lambda: mock_slack.of("chat.update"))
            await mock_slack.wait_for(lambda: len(second.slack.tasks) == 0)
        finally:
            await second.server.stop(5)
            await second.close()
    (posted,) = posts(mock_slack)
    (update,) = mock_slack.of("chat.update")
    assert update.body["ts"] == next(ts for (ch, ts) in mock_slack.messages if ch == CHANNEL)
    assert len(mock_slack.of("conversations.history")) == 1


def test_the_receiver_needs_a_channel() -> None:
    from bot.errors import ConfigError
    from bot.settings import load_settings

    with pytest.raises(ConfigError, match="alerts_channel"):
        load_settings(env={}, alerts_token="t")
    settings = load_settings(env={}, alerts_token=TOKEN, alerts_channel="C1")
    assert TOKEN not in repr(settings) and settings.alerts_token.get() == TOKEN
