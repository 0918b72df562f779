"""End to end: the watch-fed cache's stream turns a GPU node going bad into one diagnosis and one post.

The real bot on the simulated leak cluster, its watch-fed cache synced from the simulator's watch
streams. Stopping a node's kubelet makes the simulator's node lifecycle mark it Ready=Unknown
(as the node controller does); a GPU whose allocatable drops below capacity is the device plugin
marking a card unhealthy. Each is seen by the next poll of the cache, batched for the debounce,
and diagnosed once with node-status over the nodes concerned; more polls post nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.proactive import SweepResult, Watcher
from bot.sim.cluster import SimCluster
from bot.state.opening import open_sqlite
from bot.wiring import Bot
from tests.proactive.rig import CHANNEL, SCENARIOS, posts, put, started, stopped, watch_settings
from tests.slack.mock_slack_api import MockSlackApi

LEAK = SCENARIOS / "leak.yaml"


async def _synced(bot: Bot) -> Watcher:
    (watcher,) = bot.watchers
    cache = bot.service.clients.cache_for("sim")  # type: ignore[attr-defined]
    assert cache is not None and await cache.wait_ready(30)
    assert await watcher.follow_stream() is None  # the first poll only learns the current state
    return watcher


async def _next_diagnosis(watcher: Watcher, timeout: float = 20.0) -> SweepResult:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (result := await watcher.follow_stream()) is None:
        assert loop.time() < deadline, "no diagnosis from the stream"
        await asyncio.sleep(0.05)
    return result


def _record_diagnoses(watcher: Watcher) -> list[list[str]]:
    """The node lists the stream's diagnoses ask for, in order (the diagnosis itself still runs)."""
    asked: list[list[str]] = []
    diagnose = watcher.diagnose_nodes

    async def recorded(nodes: list[str]) -> SweepResult:
        asked.append(nodes)
        return await diagnose(nodes)

    watcher.diagnose_nodes = recorded  # type: ignore[method-assign]
    return asked


def _codes(settings_path: str) -> dict[str, str]:
    return {
        row.problem.subject: row.problem.code
        for row in open_sqlite(settings_path).problems.open_problems("sim", CHANNEL).values()
    }


async def test_a_gpu_node_turning_not_ready_is_posted_once(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, stream_debounce_s=0.3)
        bot = await started(settings)
        try:
            watcher = await _synced(bot)
            sim.api.lifecycle.grace_s = 0.05
            sim.ssh.execute("gpu-b", "systemctl stop kubelet")
            result = await _next_diagnosis(watcher)
            assert len(result.posted) == 1 and len(posts(mock_slack)) == 1
            assert _codes(settings.state_path) == {"node/gpu-b": "NODE_NOT_READY"}
            assert "gpu-b" in posts(mock_slack)[0].body["text"]
            for _ in range(10):  # the node stays NotReady: nothing new to react to
                assert await watcher.follow_stream() is None
                await asyncio.sleep(0.05)
            assert (await watcher.sweep()).posted != [] and len(posts(mock_slack)) == 3  # the leak on gpu-a
            assert len([p for p in posts(mock_slack) if "gpu-b" in p.body["text"]]) == 1
            sim.ssh.execute("gpu-b", "systemctl start kubelet")  # Ready again: resolved within seconds
            recovered = await _next_diagnosis(watcher)
            assert recovered.resolved == result.posted and recovered.posted == []
            assert len(posts(mock_slack)) == 3
        finally:
            await stopped(bot)


async def test_a_burst_of_changes_on_two_nodes_is_one_diagnosis(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, stream_debounce_s=1.0)
        bot = await started(settings)
        try:
            watcher = await _synced(bot)
            node = sim.api.store.find("Node", "gpu-b")
            assert node is not None
            status = node["status"]
            put(
                sim, "Node", "gpu-b", status={**status, "allocatable": {**status["allocatable"], "nvidia.com/gpu": "1"}}
            )
            sim.api.lifecycle.grace_s = 0.05
            sim.ssh.execute("gpu-a", "systemctl stop kubelet")
            sim.ssh.execute("gpu-b", "systemctl stop kubelet")
            asked = _record_diagnoses(watcher)
            await _next_diagnosis(watcher)
            assert asked == [["gpu-a", "gpu-b"]]
            codes = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL).values()
            assert {(r.problem.subject, r.problem.code) for r in codes} >= {
                ("node/gpu-a", "NODE_NOT_READY"),
                ("node/gpu-b", "NODE_NOT_READY"),
            }
        finally:
            await stopped(bot)


async def test_a_device_plugin_pod_starting_to_crash_loop_triggers_its_node(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, stream_debounce_s=0.0)
        bot = await started(settings)
        try:
            watcher = await _synced(bot)
            asked = _record_diagnoses(watcher)
            pod = sim.api.store.find("Pod", "nvidia-device-plugin-daemonset-ax0q", "kube-system")
            assert pod is not None
            waiting = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting"}}
            (container,) = pod["status"]["containerStatuses"]
            crashing = {**container, "ready": False, "restartCount": 4, "state": waiting}
            put(
                sim,
                "Pod",
                pod["metadata"]["name"],
                "kube-system",
                status={**pod["status"], "containerStatuses": [crashing]},
            )
            ds = sim.api.store.find("DaemonSet", "nvidia-device-plugin-daemonset", "kube-system")
            assert ds is not None
            put(
                sim,
                "DaemonSet",
                "nvidia-device-plugin-daemonset",
                "kube-system",
                status={**ds["status"], "numberReady": 1},
            )
            await _next_diagnosis(watcher)
            assert asked == [["gpu-a"]]
            for _ in range(5):  # still crash-looping: not a new trigger
                assert await watcher.follow_stream() is None
            assert asked == [["gpu-a"]]
        finally:
            await stopped(bot)


async def test_the_sweep_and_the_stream_finding_the_same_problem_at_once_post_it_once(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        bot = await started(watch_settings(mock_slack, sim))
        try:
            (watcher,) = bot.watchers
            swept, streamed = await asyncio.gather(watcher.sweep(), watcher.diagnose_nodes(["gpu-a"]))
            assert len(swept.posted) + len(streamed.posted) == 2  # the leak and the zombie on gpu-a
            assert len(posts(mock_slack)) == 2 and not swept.failed and not streamed.failed
        finally:
            await stopped(bot)
