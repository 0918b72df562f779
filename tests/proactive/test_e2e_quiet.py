"""End to end: quiet hours hold back a new warning until they end; a critical problem still posts.

The real bot on the simulator; the watch's clock is set to a night in Berlin (the quiet hours'
zone), so the test does not depend on when it runs. A cordoned GPU node (NODE_CORDONED, a warning
in the finding catalogue) and the pod it leaves Pending wait; once the morning comes, the
catch-up finds both again and posts each once. The leak scenario's findings are critical and post
in the middle of the night.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings
from bot.sim.cluster import SimCluster
from tests.proactive.rig import SCENARIOS, posts, started, stopped, watch_settings
from tests.slack.mock_slack_api import MockSlackApi

BERLIN = ZoneInfo("Europe/Berlin")
NIGHT = datetime(2026, 12, 1, 23, 30, tzinfo=BERLIN)
MORNING = datetime(2026, 12, 2, 7, 5, tzinfo=BERLIN)
QUIET = {"quiet_hours": "22:00-07:00", "quiet_hours_timezone": "Europe/Berlin"}


async def test_quiet_hours_defer_a_warning_until_they_end(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "cordoned-gpu-node.yaml", workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, codes=("NODE_CORDONED",), **QUIET)
        bot = await started(settings)
        try:
            (watcher,) = bot.watchers
            watcher.clock = lambda: NIGHT
            night = await watcher.sweep()
            assert night.posted == [] and len(night.deferred) == 1 and posts(mock_slack) == []
            waiting = await watcher.check_pending()  # its Pending pod: a warning too (cordoned node)
            assert waiting.posted == [] and len(waiting.deferred) == 1
            assert await watcher.catch_up() is None  # still quiet
            watcher.clock = lambda: MORNING
            morning = await watcher.catch_up()
            assert morning is not None and sorted(morning.posted) == sorted(night.deferred + waiting.deferred)
            texts = [m.body["text"] for m in posts(mock_slack)]
            assert len(texts) == 2 and any("gpu-a10-1" in t for t in texts)
            assert await watcher.catch_up() is None and (await watcher.sweep()).posted == []
        finally:
            await stopped(bot)
    assert len(posts(mock_slack)) == 2


async def test_critical_problems_post_during_quiet_hours(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "leak.yaml", workdir=tmp_path) as sim:
        bot = await started(watch_settings(mock_slack, sim, **QUIET))
        try:
            (watcher,) = bot.watchers
            watcher.clock = lambda: NIGHT
            night = await watcher.sweep()
            assert len(night.posted) == 2 and night.deferred == []
        finally:
            await stopped(bot)


def test_quiet_hours_settings_are_checked() -> None:
    clusters = [{"name": "prod"}]
    for span, zone, why in (
        ("22-07", "UTC", "HH:MM-HH:MM"),
        ("22:00-22:00", "UTC", "same time"),
        ("22:00-07:00", "Mars/Olympus", "unknown time zone"),
    ):
        watch = [{"cluster": "prod", "channel": "C1", "quiet_hours": span, "quiet_hours_timezone": zone}]
        with pytest.raises(ConfigError, match=why):
            load_settings(env={}, clusters=clusters, watch=watch)
