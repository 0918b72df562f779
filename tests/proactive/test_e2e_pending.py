"""End to end: a GPU pod Pending longer than ``pending_after_s`` is posted once and resolved in place.

The real bot (``build_bot``) on the simulated untolerated-taint cluster: its StatefulSet's pod
asks for two GPUs and cannot schedule (the GPU nodes are tainted). The pod is made fresh (created
now), so the first check finds it too young; after ``pending_after_s`` one message names the
workload and the why-pending cause; more checks post nothing; once the pod is scheduled and
running the message is edited to resolved. The signed HTTP side keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.server import serve
from bot.sim.cluster import SimCluster
from bot.slack.transport import SlackServer
from bot.state.opening import open_sqlite
from tests.proactive.rig import CHANNEL, SCENARIOS, now_text, posts, put, started, stopped, watch_settings
from tests.slack.helpers import form, post, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

POD, NAMESPACE = "bert-train-0", "research"


async def test_a_pending_gpu_workload_is_posted_once_after_pending_after_and_resolved_when_it_runs(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(SCENARIOS / "untolerated-taint.yaml", workdir=tmp_path) as sim:
        pod = sim.api.store.find("Pod", POD, NAMESPACE)
        assert pod is not None
        settings = watch_settings(mock_slack, sim, pending_after_s=2.0)
        bot = await started(settings)
        try:
            (watcher,) = bot.watchers
            # created now (the timestamp has whole seconds: at most one second old at the check)
            put(sim, "Pod", POD, NAMESPACE, metadata={**pod["metadata"], "creationTimestamp": now_text()})
            young = await watcher.check_pending()
            assert young.posted == [] and posts(mock_slack) == []  # not Pending long enough yet

            await asyncio.sleep(2.1)
            due = await watcher.check_pending()
            assert len(due.posted) == 1
            (message,) = posts(mock_slack)
            text = json.dumps(message.body["blocks"], ensure_ascii=False)
            assert "research/StatefulSet/bert-train" in text and "`SCHED_UNTOLERATED_TAINT`" in text
            assert "nvidia.com/gpu" in text

            body = form(slash_payload(mock_slack, "help", channel=CHANNEL))
            status, _, _ = await post(f"http://127.0.0.1:{bot.server.port}/slack/events", body, sign(body))
            assert status == 200

            for _ in range(3):
                again = await watcher.check_pending()
                assert again.posted == [] and again.changed == [] and again.unchanged == due.posted
            assert len(posts(mock_slack)) == 1
            assert (await watcher.sweep()).resolved == [], "the node sweep leaves pending problems alone"

            scheduled = {**pod["spec"], "nodeName": "gpu-a100-1"}
            put(sim, "Pod", POD, NAMESPACE, spec=scheduled, status={"phase": "Running"})
            gone = await watcher.check_pending()
            assert gone.resolved == due.posted and gone.posted == []
        finally:
            await stopped(bot)

    assert len(posts(mock_slack)) == 1, "resolving edits the post"
    (row,) = open_sqlite(settings.state_path).problems.history(due.posted[0])
    assert row.resolved_at is not None and row.problem.subject == "workload/research/StatefulSet/bert-train"
    assert mock_slack.message(CHANNEL, row.message_ts)["text"].startswith("resolved after under a minute: ")


async def test_serve_runs_the_pending_check_on_its_own_interval(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "untolerated-taint.yaml", workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, pending_after_s=0.0, pending_check_s=0.05)
        stop = asyncio.Event()
        ready: asyncio.Future[SlackServer] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(settings, stop=stop, started=ready, configure_logs=False))
        await asyncio.wait_for(asyncio.shield(ready), 30)
        await mock_slack.wait_for(lambda: len(posts(mock_slack)) >= 1, timeout=60)
        await asyncio.sleep(0.3)  # several more checks: still one message
        stop.set()
        await asyncio.wait_for(task, 30)
    assert len(posts(mock_slack)) == 1
    (row,) = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL).values()
    assert row.problem.code == "SCHED_UNTOLERATED_TAINT"
