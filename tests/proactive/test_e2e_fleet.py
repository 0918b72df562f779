"""End to end: the watches of one cluster share its fleet read; a watch never sweeps from a stale one.

Two watches of the simulated leak cluster, posting to two channels, sweep at the same moment: the
nodes are read once and each channel gets its own two posts. A sweep that comes after its own
previous one always reads the fleet again (it must see what changed since), even seconds later.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.settings import WatchConfig
from bot.sim.cluster import SimCluster
from tests.proactive.rig import SCENARIOS, posts, started, stopped
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi


async def test_two_watches_of_a_cluster_read_its_fleet_once(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "leak.yaml", workdir=tmp_path) as sim:
        watches = tuple(WatchConfig(cluster=sim.cluster_name, channel=ch, enabled=True) for ch in ("C0A", "C0B"))
        bot = await started(settings_for(mock_slack, base=sim.settings(), watch=watches))
        try:
            one, two = bot.watchers
            assert one.fleet is two.fleet
            first, second = await asyncio.gather(one.sweep(), two.sweep())
            assert one.fleet.reads == 1
            assert len(first.posted) == len(second.posted) == 2
            assert len(posts(mock_slack, "C0A")) == len(posts(mock_slack, "C0B")) == 2
            again = await one.sweep()
            assert one.fleet.reads == 2 and sorted(again.unchanged) == sorted(first.posted)
            assert (await two.sweep()).posted == [] and one.fleet.reads == 2  # read after its last sweep: shared
        finally:
            await stopped(bot)
