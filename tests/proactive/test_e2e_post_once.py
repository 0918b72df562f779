"""A watch post is made once, even when the process stops between posting it and recording it.

Issue 29: ``test_serve_sweeps_an_enabled_watch_on_its_interval_and_stops`` saw 2 posts but 1 open
problem in the store at shutdown: the second post reached Slack, the sweep was cancelled before
its ts was written, and the next process would have posted it again. Now the problem is recorded
before the post (an intent) and its ts after; the next run finds the message in the channel's
history by the key in its metadata and records it instead of posting again.

The stop is made real: the recording Slack API keeps ``chat.postMessage``'s answer (the message
is already in the channel) while the sweep is cancelled, as ``serve`` cancels it on SIGTERM.
Both state backends: the state file end to end (the real bot on the simulator), and the
``GpuWatchRecord`` objects on the simulated API server under the same watcher and Slack client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import Invocation
from bot.proactive import Watcher
from bot.report import Finding, NodeRow, Remediation, Report
from bot.settings import WatchConfig
from bot.sim.cluster import SimCluster
from bot.slack.watch_notifier import SlackWatchNotifier
from bot.state.kube_watch import KubeProblemStore
from bot.state.opening import open_sqlite
from tests.proactive.rig import CHANNEL, SCENARIOS, posts, started, stopped, watch_settings
from tests.replicas.conftest import StateSim, sim_loop, start_state_sim  # noqa: F401 - fixtures
from tests.slack.mock_slack_api import MockSlackApi

LEAK = SCENARIOS / "leak.yaml"


async def stop_mid_post(mock: MockSlackApi, sweep: Callable[[], Any], *, posted: int) -> None:
    """Run ``sweep`` until Slack has taken post number ``posted`` and cancel it before the answer."""
    hold = mock.stall["chat.postMessage"] = asyncio.Event()
    task = asyncio.create_task(sweep())
    await mock.wait_for(lambda: len(posts(mock)) == posted)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    del mock.stall["chat.postMessage"]
    hold.set()


async def test_a_stop_between_post_and_record_does_not_post_again_after_a_restart(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(LEAK, workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim)
        first = await started(settings)
        try:
            await stop_mid_post(mock_slack, first.watchers[0].sweep, posted=1)
        finally:
            await stopped(first)
        (interrupted,) = posts(mock_slack)
        rows = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL)
        assert [r.posting for r in rows.values()] == [True]  # recorded before the post

        second = await started(settings)
        try:
            await second.watchers[0].sweep()
            await second.watchers[0].sweep()
        finally:
            await stopped(second)
    assert len(posts(mock_slack)) == 2, [c.body["text"] for c in posts(mock_slack)]
    assert len(mock_slack.of("conversations.history")) == 1
    rows = open_sqlite(settings.state_path).problems.open_problems("sim", CHANNEL)
    shown = {ts for (channel, ts) in mock_slack.messages if channel == CHANNEL}
    assert len(rows) == 2 and {r.message_ts for r in rows.values()} == shown
    fp = interrupted.body["metadata"]["event_payload"]["fingerprint"]
    assert rows[fp].message_ts == min(shown)  # the interrupted post, found and kept


class Fixed:
    """The diagnosis the watch reads: prepared node-status reports (the subject here is the store
    and the Slack side, which are real)."""

    def __init__(self, *nodes: str) -> None:
        self.nodes = list(nodes)

    async def run(self, inv: Invocation) -> Report:
        report = Report(command="node-status", target={"nodes": []})
        report.nodes = [NodeRow(node=n, ready=True, cordoned=False, ssh="ok") for n in ("gpu-1", "gpu-2")]
        report.findings = [
            Finding("CHECKPOINT_ZOMBIE", "critical", f"The kubelet checkpoint on {n} holds devices of 1 pod(s)",
                    remediations=[Remediation("checkpoint.clear", {"node": n}, "clear")])
            for n in self.nodes
        ]
        return report


@pytest.fixture(params=["sqlite", "kubernetes"])
def store(request: pytest.FixtureRequest, tmp_path: Path, start_state_sim: Callable[..., StateSim]) -> Any:  # noqa: F811
    if request.param == "sqlite":
        return open_sqlite(tmp_path / "state.db").problems
    return KubeProblemStore(start_state_sim().state())


def watcher(mock: MockSlackApi, store: Any, service: Fixed, *, posts_per_hour: int = 20) -> Watcher:
    """A fresh process's watcher: nothing in memory, only the store and the channel."""
    client = AsyncWebClient(token="xoxb-test", base_url=mock.base + "/api/")
    config = WatchConfig(cluster="prod", channel=CHANNEL, enabled=True)
    return Watcher(config, service, store, SlackWatchNotifier(client), posts_per_hour=posts_per_hour)


async def test_each_store_keeps_the_intent_and_the_next_process_finds_the_message(
    mock_slack: MockSlackApi, store: Any
) -> None:
    service = Fixed("gpu-1", "gpu-2")
    await stop_mid_post(mock_slack, watcher(mock_slack, store, service).sweep, posted=1)
    assert [r.posting for r in store.open_problems("prod", CHANNEL).values()] == [True]
    result = await watcher(mock_slack, store, service).sweep()
    assert len(result.posted) == 1 and len(result.unchanged) == 1 and len(posts(mock_slack)) == 2
    rows = store.open_problems("prod", CHANNEL)
    assert sorted(r.message_ts for r in rows.values()) == sorted(ts for (_, ts) in mock_slack.messages)


async def test_an_intent_never_posted_is_posted_once_or_resolved_quietly(mock_slack: MockSlackApi, store: Any) -> None:
    """Stopped before Slack took the post: the next run posts it once; gone by then: nothing to edit."""
    mock_slack.failures["chat.postMessage"] = "fatal_error"  # Slack refuses: nothing in the channel
    service = Fixed("gpu-1", "gpu-2")
    assert len((await watcher(mock_slack, store, service).sweep()).failed) == 2
    del mock_slack.failures["chat.postMessage"]
    service.nodes = ["gpu-1"]  # gpu-2's problem went away meanwhile
    result = await watcher(mock_slack, store, service).sweep()
    assert len(result.posted) == 1 and len(result.resolved) == 1 and len(mock_slack.messages) == 1
    assert not mock_slack.of("chat.update")  # nothing was shown for gpu-2, so nothing is edited
    (row,) = store.open_problems("prod", CHANNEL).values()
    assert not row.posting and (CHANNEL, row.message_ts) in mock_slack.messages


async def test_an_unreadable_history_posts_again_rather_than_never(
    mock_slack: MockSlackApi, store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the history scopes the message cannot be found: at least once beats never."""
    service = Fixed("gpu-1")
    await stop_mid_post(mock_slack, watcher(mock_slack, store, service).sweep, posted=1)
    mock_slack.failures["conversations.history"] = "missing_scope"
    caplog.set_level(logging.WARNING)
    result = await watcher(mock_slack, store, service).sweep()
    assert len(result.posted) == 1 and len(posts(mock_slack)) == 2
    assert "could not read the channel's history" in caplog.text


async def test_the_rate_limit_summary_is_posted_once_across_a_stop(mock_slack: MockSlackApi, store: Any) -> None:
    """The channel's one summary per hour keeps the same promise as the problems' posts."""
    await watcher(mock_slack, store, Fixed("gpu-1"), posts_per_hour=1).sweep()  # the hour's one post
    both = Fixed("gpu-1", "gpu-2")
    await stop_mid_post(mock_slack, watcher(mock_slack, store, both, posts_per_hour=1).sweep, posted=2)
    result = await watcher(mock_slack, store, both, posts_per_hour=1).sweep()
    assert len(result.held) == 1 and not result.failed
    summaries = [c for c in posts(mock_slack) if "not posted" in c.body["text"]]
    assert len(summaries) == 1 and len(posts(mock_slack)) == 2
    (ts,) = [ts for (_, ts), m in mock_slack.messages.items() if "not posted" in m["text"]]
    assert store.summary(CHANNEL)[0] == ts
