"""End to end: only the leader replica watches and posts; a follower reads nothing and posts nothing.

Leader election itself lives elsewhere; the watch and the alert desk take an ``is_leader`` check
(default: always). Here it is a flag the test flips: the follower's sweep and pending check are
skipped without a single API request, its ``POST /alerts`` answers 503 (Alertmanager retries a
5xx, so the alert reaches the leader instead of being lost) and posts nothing; once it leads, the
same bot posts as usual.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bot.commands import Invocation
from bot.report import Report
from bot.settings import Secret
from bot.sim.cluster import SimCluster
from bot.wiring import Bot
from tests.proactive.rig import SCENARIOS, posts, started, stopped, watch_settings
from tests.slack.mock_slack_api import MockSlackApi
from tests.slack.test_alerts import TOKEN, payload, send, xid
from tests.slack.test_alerts import posts as alert_posts


def _count_diagnoses(bot: Bot) -> list[str]:
    """The commands the bot's diagnosis service runs from now on (each still runs)."""
    ran: list[str] = []
    run = bot.service.run

    async def counted(inv: Invocation) -> Report:
        ran.append(inv.command)
        return await run(inv)

    bot.service.run = counted  # type: ignore[method-assign]
    return ran


async def test_a_follower_neither_reads_nor_posts_until_it_leads(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    leading = False
    async with SimCluster.from_file(SCENARIOS / "leak.yaml", workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, pending_after_s=0.0)
        bot = await started(replace(settings, alerts_token=Secret(TOKEN), alerts_channel="C0ALERTS"))
        try:
            (watcher,) = bot.watchers
            watcher.is_leader = lambda: leading
            assert bot.alert_desk is not None
            bot.alert_desk.is_leader = lambda: leading
            diagnoses = _count_diagnoses(bot)
            assert (await watcher.sweep()).skipped and (await watcher.check_pending()).skipped
            assert await watcher.follow_stream() is None
            assert diagnoses == [], "a follower diagnoses nothing"
            firing = json.dumps(payload("firing", [xid(0)])).encode()
            assert (await send(bot, firing, "Bearer nope"))[0] == 401  # credentials first
            assert (await send(bot, firing))[0] == 503
            assert posts(mock_slack) == [] and alert_posts(mock_slack) == []

            leading = True
            assert len((await watcher.sweep()).posted) == 2
            assert (await send(bot, firing))[0] == 200
            await mock_slack.wait_for(lambda: alert_posts(mock_slack))
        finally:
            await stopped(bot)
