"""End to end: workloads a Kueue ClusterQueue holds for the same reason are one proactive thread
for the queue, naming each of them, not one post per workload (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path

from bot.sim.cluster import SimCluster
from tests.proactive.rig import SCENARIOS, posts, started, stopped, watch_settings
from tests.slack.mock_slack_api import MockSlackApi


async def test_one_thread_per_cluster_queue(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "kueue-queue-backlog-k8s130.yaml", workdir=tmp_path) as sim:
        bot = await started(watch_settings(mock_slack, sim, pending_after_s=1.0))
        try:
            (watcher,) = bot.watchers
            due = await watcher.check_pending()
            assert len(due.posted) == 1, due
            (message,) = posts(mock_slack)
            text = json.dumps(message.body["blocks"], ensure_ascii=False)
            assert "ClusterQueue cluster-queue" in text and "KUEUE_NOT_ADMITTED" in text
            assert "2 workloads wait in this queue for the same reason" in text, text
            assert "ai/MPIJob/tf-bench-2" in text and "ai/RayJob/pytorch-text-classifier" in text
            again = await watcher.check_pending()
            assert again.posted == [] and again.resolved == [] and len(posts(mock_slack)) == 1
        finally:
            await stopped(bot)
