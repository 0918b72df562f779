"""End to end: a Job Kueue holds (suspended, no pod) is a proactive post like a pending pod."""

from __future__ import annotations

import json
from pathlib import Path

from bot.sim.cluster import SimCluster
from tests.proactive.rig import SCENARIOS, posts, started, stopped, watch_settings
from tests.slack.mock_slack_api import MockSlackApi


async def test_a_job_kueue_does_not_admit_is_posted_once(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "kueue-quota-exhausted-gpu-k8s129.yaml", workdir=tmp_path) as sim:
        bot = await started(watch_settings(mock_slack, sim, pending_after_s=1.0))
        try:
            (watcher,) = bot.watchers
            due = await watcher.check_pending()
            assert len(due.posted) == 1
            (message,) = posts(mock_slack)
            text = json.dumps(message.body["blocks"], ensure_ascii=False)
            assert "ai/Job/train" in text and "KUEUE_NOT_ADMITTED" in text
            assert "cluster-queue has 0 of 2 nvidia.com/gpu free" in text
            again = await watcher.check_pending()
            assert again.posted == [] and len(posts(mock_slack)) == 1
        finally:
            await stopped(bot)
