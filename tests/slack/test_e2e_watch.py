"""End to end: the watch sweeps the simulated leak cluster and keeps exactly one message current.

The real bot (``build_bot``: Bolt app over HTTP, the real diagnosis service, the state file)
talks to the simulator's Kubernetes API and SSH nodes over real sockets and to the recording mock
Web API. A leak is posted once; more sweeps post nothing; fixing the node (its kubelet checkpoint
emptied, as the confirmed checkpoint.clear leaves it) edits that message to resolved; a restart
in between neither re-posts nor forgets.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.server import serve
from bot.settings import Settings, WatchConfig
from bot.sim.cluster import SimCluster
from bot.slack.transport import SlackServer
from bot.state.opening import open_sqlite
from bot.wiring import Bot, build_bot
from tests.slack.helpers import (
    action_payload,
    click_payload,
    form,
    interaction_form,
    post,
    settings_for,
    sign,
    slash_payload,
)
from tests.slack.mock_slack_api import Call, MockSlackApi

LEAK = Path(__file__).resolve().parents[2] / "scenarios" / "leak.yaml"
CHANNEL = "C0WATCH"
#: gpu-a's checkpoint once the stale entry is gone: the devices stay registered, nobody holds them
CLEAN_CHECKPOINT = json.dumps(
    {
        "Data": {
            "PodDeviceEntries": [],
            "RegisteredDevices": {"nvidia.com/gpu": [f"GPU-a1a1a1a1-0000-4000-8000-00000000000{i}" for i in (0, 1)]},
        },
        "Checksum": 1234567890,
    }
)


def _settings(mock: MockSlackApi, sim: SimCluster, **watch: Any) -> Settings:
    entry = WatchConfig(cluster=sim.cluster_name, channel=CHANNEL, enabled=True, **watch)
    return settings_for(mock, base=sim.settings(), watch=(entry,))


def _posts(mock: MockSlackApi) -> list[Call]:
    """Top-level messages posted to the watch channel (thread replies are not new posts)."""
    return [c for c in mock.of("chat.postMessage") if c.body.get("channel") == CHANNEL and not c.body.get("thread_ts")]


async def _started(settings: Settings) -> Bot:
    bot = build_bot(settings)
    await bot.start()
    return bot


async def _stopped(bot: Bot) -> None:
    await bot.server.stop(bot.settings.shutdown_grace_s)
    await bot.close()


async def test_a_leak_is_posted_once_kept_quiet_and_resolved_in_place(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = _settings(mock_slack, sim)
        bot = await _started(settings)
        try:
            (watcher,) = bot.watchers
            first = await watcher.sweep()
            assert len(first.posted) == 2  # the leak and the zombie checkpoint behind it, both on gpu-a
            posts = _posts(mock_slack)
            assert len(posts) == 2
            text = json.dumps([p.body["blocks"] for p in posts], ensure_ascii=False)
            assert "`LEAK_LOGICAL_NOT_PHYSICAL`" in text and "`CHECKPOINT_ZOMBIE`" in text
            assert "gpu-a" in text and "GPU_IDLE" not in text  # only watched codes are posted
            # the signed HTTP side keeps answering while the watch runs
            body = form(slash_payload(mock_slack, "help", channel=CHANNEL))
            status, _, _ = await post(f"http://127.0.0.1:{bot.server.port}/slack/events", body, sign(body))
            assert status == 200

            for _ in range(3):
                again = await watcher.sweep()
                assert again.posted == [] and again.changed == [] and sorted(again.unchanged) == sorted(first.posted)
            assert len(_posts(mock_slack)) == 2
            assert not [c for c in mock_slack.of("chat.update") if c.body.get("channel") == CHANNEL]
        finally:
            await _stopped(bot)

        # a restart in between: the new bot finds its open problems in the state file
        bot = await _started(settings)
        try:
            (watcher,) = bot.watchers
            after_restart = await watcher.sweep()
            assert after_restart.posted == [] and len(_posts(mock_slack)) == 2

            sim.ssh.state("gpu-a").checkpoint = CLEAN_CHECKPOINT + "\n"
            fixed = await watcher.sweep()
            assert sorted(fixed.resolved) == sorted(first.posted) and fixed.posted == []
        finally:
            await _stopped(bot)

    assert len(_posts(mock_slack)) == 2, "resolving edits the posts, it posts no new message"
    store = open_sqlite(settings.state_path).problems
    for fp in first.posted:
        (row,) = store.history(fp)  # one row: the restart did not open the problem again
        assert row.resolved_at is not None and row.problem.subject == "node/gpu-a"
        message = mock_slack.message(CHANNEL, row.message_ts)
        assert message["text"] == f"resolved after under a minute: {row.problem.title}"
        assert message["blocks"][0]["text"]["text"].startswith("✅ resolved: sim: ")
        assert "resolved " in message["blocks"][-1]["elements"][0]["text"]
        replies = [c for c in mock_slack.of("chat.postMessage") if c.body.get("thread_ts") == row.message_ts]
        assert [r.body["text"] for r in replies] == ["resolved: no longer seen after under a minute"]
    assert store.open_problems("sim", CHANNEL) == {}


async def test_serve_sweeps_an_enabled_watch_on_its_interval_and_stops(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = _settings(mock_slack, sim, interval_s=0.05)
        stop = asyncio.Event()
        started: asyncio.Future[SlackServer] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(settings, stop=stop, started=started, configure_logs=False))
        await asyncio.wait_for(asyncio.shield(started), 30)
        await mock_slack.wait_for(lambda: len(_posts(mock_slack)) >= 2, timeout=60)
        stop.set()
        await asyncio.wait_for(task, 30)
    assert len(_posts(mock_slack)) == 2
    assert len(open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL)) == 2
    assert not [t for t in asyncio.all_tasks() if "sweep_periodically" in repr(t.get_coro())]


async def test_a_watch_that_is_not_enabled_builds_no_watcher(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        off = WatchConfig(cluster=sim.cluster_name, channel=CHANNEL)
        settings = settings_for(mock_slack, base=sim.settings(), watch=(off,))
        bot = build_bot(settings)
        try:
            assert bot.watchers == []
            # the watch's tables are part of the state file's schema (version 4); nothing is in them
            with sqlite3.connect(settings.state_path) as db:
                rows = db.execute("SELECT COUNT(*) FROM watch_problems").fetchone()[0]
            assert rows == 0, "no enabled watch, no problem recorded"
        finally:
            await bot.close()


async def _click(mock: MockSlackApi, bot: Bot, value: str) -> None:
    body = interaction_form(click_payload(mock, value, user="U0CAROL"))
    status, _, _ = await post(f"http://127.0.0.1:{bot.server.port}/slack/events", body, sign(body))
    assert status == 200


def _fingerprints(settings: Settings) -> dict[str, str]:
    """code -> fingerprint of the open problems."""
    rows = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL).values()
    return {row.problem.code: row.problem.fingerprint for row in rows}


async def test_snoozes_outlive_a_restart_and_until_resolved_ends_with_the_problem(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        broken = sim.ssh.state("gpu-a").checkpoint
        settings = _settings(mock_slack, sim)
        bot = await _started(settings)
        try:
            await bot.watchers[0].sweep()
            fps = _fingerprints(settings)
            assert set(fps) == {"LEAK_LOGICAL_NOT_PHYSICAL", "CHECKPOINT_ZOMBIE"} and len(_posts(mock_slack)) == 2
            await _click(mock_slack, bot, f"1d:{fps['LEAK_LOGICAL_NOT_PHYSICAL']}")
            await _click(mock_slack, bot, f"resolved:{fps['CHECKPOINT_ZOMBIE']}")

            def snoozed() -> list[Call]:
                return [c for c in mock_slack.of("chat.postMessage") if "snoozed" in c.body.get("text", "")]

            await mock_slack.wait_for(lambda: len(snoozed()) == 2)
            by_thread = {r.body["thread_ts"]: r.body["text"] for r in snoozed()}
            rows = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL)
            leak_ts = rows[fps["LEAK_LOGICAL_NOT_PHYSICAL"]].message_ts
            zombie_ts = rows[fps["CHECKPOINT_ZOMBIE"]].message_ts
            assert "<@U0CAROL> snoozed this problem until 20" in by_thread[leak_ts]
            assert "<@U0CAROL> snoozed this problem until it is resolved" in by_thread[zombie_ts]
        finally:
            await _stopped(bot)

        bot = await _started(settings)  # a restart: the snoozes are read back from the state file
        try:
            (watcher,) = bot.watchers
            sim.ssh.state("gpu-a").checkpoint = CLEAN_CHECKPOINT + "\n"
            fixed = await watcher.sweep()
            assert sorted(fixed.resolved) == sorted(fps.values())  # a resolution is shown even when snoozed
            sim.ssh.state("gpu-a").checkpoint = broken
            back = await watcher.sweep()
            # the day-long snooze holds; the until-resolved one ended when the zombie was resolved
            assert back.snoozed == [fps["LEAK_LOGICAL_NOT_PHYSICAL"]]
            assert back.posted == [fps["CHECKPOINT_ZOMBIE"]]
            assert (await watcher.sweep()).posted == []
        finally:
            await _stopped(bot)
    assert len(_posts(mock_slack)) == 3


async def test_a_forged_snooze_value_changes_nothing(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = _settings(mock_slack, sim)
        bot = await _started(settings)
        try:
            payload = action_payload(
                mock_slack, "1d:$(reboot)", channel=CHANNEL, action_id="watch-snooze-1d", block_id="watch-x"
            )
            body = interaction_form(payload)
            status, _, _ = await post(f"http://127.0.0.1:{bot.server.port}/slack/events", body, sign(body))
            assert status == 200
            with sqlite3.connect(settings.state_path) as db:
                assert db.execute("SELECT COUNT(*) FROM watch_snoozes").fetchone() == (0,)
        finally:
            await _stopped(bot)
    assert not mock_slack.of("chat.postMessage")


async def test_beyond_the_channel_rate_limit_one_summary_waits_for_the_next_hour(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        entry = WatchConfig(cluster=sim.cluster_name, channel=CHANNEL, enabled=True)
        settings = settings_for(mock_slack, base=sim.settings(), watch=(entry,), watch_channel_posts_per_hour=1)
        bot = await _started(settings)
        try:
            (watcher,) = bot.watchers
            first = await watcher.sweep()
            assert len(first.posted) == 1 and len(first.held) == 1
            posts = _posts(mock_slack)
            assert len(posts) == 2 and posts[1].body["text"].startswith("⏸ 1 more GPU problem(s) not posted")
            for _ in range(3):
                again = await watcher.sweep()
                assert again.posted == [] and again.held == first.held
            assert len(_posts(mock_slack)) == 2 and not mock_slack.of("chat.update"), "the summary is not repeated"

            later = datetime.now(UTC) + timedelta(minutes=61)
            watcher.clock = lambda: later
            next_hour = await watcher.sweep()
            assert next_hour.posted == first.held and next_hour.held == []
        finally:
            await _stopped(bot)
    assert len(_posts(mock_slack)) == 3
