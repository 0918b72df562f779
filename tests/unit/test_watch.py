"""The watch's rules without a cluster: settings, fingerprints, and what each sweep posts.

A stand-in diagnosis service returns prepared node-status reports; a recording notifier stands
in for Slack (the Slack side is covered end to end in ``tests/slack/test_e2e_watch.py``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.commands import Invocation
from bot.errors import ConfigError
from bot.proactive import Problem, Watcher, problems_from_report
from bot.report import Finding, NodeRow, Remediation, Report
from bot.settings import DEFAULT_WATCH_CODES, WatchConfig, load_settings
from bot.slack.proactive_messages import lasted, render_change, render_open, render_resolved
from bot.state.opening import open_sqlite
from tests.slack.test_blocks import assert_within_limits

CLUSTERS = [{"name": "prod"}, {"name": "lab"}]


def test_watch_settings_are_off_by_default_and_checked() -> None:
    assert load_settings(env={}).watch == ()
    (w,) = load_settings(env={}, clusters=CLUSTERS, watch=[{"cluster": "lab", "channel": "C1"}]).watch
    assert (w.enabled, w.interval_s, w.codes) == (False, 600.0, DEFAULT_WATCH_CODES)
    (w,) = load_settings(
        env={},
        clusters=CLUSTERS,
        watch=[{"cluster": "prod", "channel": "C2", "enabled": "true", "interval_s": 60, "codes": ["GPU_LOST"]}],
    ).watch
    assert (w.cluster, w.channel, w.enabled, w.interval_s, w.codes) == ("prod", "C2", True, 60.0, ("GPU_LOST",))
    bad = [
        ([{"cluster": "nope", "channel": "C1"}], "unknown cluster 'nope'"),
        ([{"cluster": "prod"}], "needs a cluster and a channel"),
        ([{"cluster": "prod", "channel": "C1", "colour": "red"}], "unknown keys"),
        ([{"cluster": "prod", "channel": "C1", "interval_s": 0}], "must be positive"),
        ([{"cluster": "prod", "channel": "C1", "codes": []}], "non-empty list"),
        ([{"cluster": "prod", "channel": "C1"}, {"cluster": "prod", "channel": "C1"}], "given twice"),
        ("prod", "expected a list"),
    ]
    for value, message in bad:
        with pytest.raises(ConfigError, match=message):
            load_settings(env={}, clusters=CLUSTERS, watch=value)
    assert load_settings(env={}).watch_channel_posts_per_hour == 20
    with pytest.raises(ConfigError, match="watch_channel_posts_per_hour"):
        load_settings(env={}, watch_channel_posts_per_hour=0)


def _leak(node: str, *, count: int = 1, evidence: str = "idle") -> Finding:
    return Finding(
        code="CHECKPOINT_ZOMBIE",
        severity="critical",
        title=f"The kubelet checkpoint on {node} holds devices of {count} pod(s) that no longer exist",
        evidence=[f"{node}: {evidence}"],
        remediations=[Remediation("checkpoint.clear", {"node": node}, "clear")],
    )


def _report(*findings: Finding, nodes: tuple[str, ...] = ("gpu-1", "gpu-2"), unread: tuple[str, ...] = ()) -> Report:
    report = Report(command="node-status", target={"nodes": []})
    report.nodes = [NodeRow(node=n, ready=True, cordoned=False, ssh="timeout" if n in unread else "ok") for n in nodes]
    report.findings = list(findings)
    return report


def test_a_fingerprint_keys_on_cluster_code_and_node_not_on_counts() -> None:
    plugin = Finding("DEVICE_PLUGIN_NOT_RUNNING", "critical", "plugin is not running on 3 GPU node(s)")
    idle = Finding(code="GPU_IDLE", severity="info", title="2 GPU(s) on gpu-1 are idle")
    one = problems_from_report(_report(_leak("gpu-1"), plugin, idle), cluster="prod", codes=DEFAULT_WATCH_CODES)
    two = problems_from_report(
        _report(_leak("gpu-1", count=2), replace(plugin, title="plugin is not running on 4 GPU node(s)")),
        cluster="prod",
        codes=DEFAULT_WATCH_CODES,
    )
    assert [p.subject for p in one] == ["node/gpu-1", "title/plugin is not running on # GPU node(s)"]
    assert [p.fingerprint for p in one] == [p.fingerprint for p in two]
    assert one[0].digest != two[0].digest  # the count changed: same problem, new content
    other = problems_from_report(_report(_leak("gpu-1")), cluster="lab", codes=DEFAULT_WATCH_CODES)
    assert other[0].fingerprint != one[0].fingerprint
    titled = Finding(code="GPU_LOST", severity="critical", title="A GPU fell off the bus on gpu-2")
    assert problems_from_report(_report(titled), cluster="prod", codes=["GPU_LOST"])[0].subject == "node/gpu-2"


class Reports:
    """A diagnosis service that answers the next prepared report."""

    def __init__(self, *reports: Report) -> None:
        self.reports = list(reports)
        self.asked: list[Invocation] = []

    async def run(self, inv: Invocation) -> Report:
        self.asked.append(inv)
        return self.reports.pop(0)


class Recorder:
    """A notifier that records what it was told, and fails when told to."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail = False
        self._ts = 0

    async def post_open(
        self, channel: str, problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = ""
    ) -> str:
        if self.fail:
            raise RuntimeError("channel_not_found")
        self._ts += 1
        self.calls.append(("post", problem.subject))
        return f"17.{self._ts}"

    async def update_open(
        self,
        channel: str,
        ts: str,
        before: Problem,
        after: Problem,
        *,
        opened_at: datetime,
        seen_at: datetime,
        owner: str = "",
    ) -> None:
        self.calls.append(("update", ts))

    async def resolve(
        self, channel: str, ts: str, problem: Problem, *, opened_at: datetime, resolved_at: datetime
    ) -> None:
        if self.fail:
            raise RuntimeError("ratelimited")
        self.calls.append(("resolve", ts))

    async def find_posted(self, channel: str, fingerprint: str, *, opened_at: datetime) -> str | None:
        return None  # a failed post never reached the channel


async def test_a_sweep_posts_new_edits_changed_and_resolves_only_what_it_could_see(tmp_path: Path) -> None:
    service = Reports(
        _report(_leak("gpu-1"), _leak("gpu-2")),
        _report(_leak("gpu-1", count=2), _leak("gpu-2")),  # gpu-1 changed
        _report(unread=("gpu-2",)),  # gpu-1 is clean; gpu-2 could not be read, so its leak stays open
        _report(),  # now gpu-2 is read and clean too
    )
    notifier = Recorder()
    clock = iter(datetime(2026, 5, 1, 10, 0, tzinfo=UTC) + timedelta(minutes=10 * i) for i in range(10))
    watcher = Watcher(
        WatchConfig(cluster="prod", channel="C1", enabled=True),
        service,
        open_sqlite(tmp_path / "state.db").problems,
        notifier,
        clock=lambda: next(clock),
    )
    await watcher.sweep()
    assert notifier.calls == [("post", "node/gpu-1"), ("post", "node/gpu-2")]
    changed = await watcher.sweep()
    assert len(changed.changed) == 1 and notifier.calls[2:] == [("update", "17.1")]
    await watcher.sweep()
    assert notifier.calls[3:] == [("resolve", "17.1")]
    last = await watcher.sweep()
    assert notifier.calls[4:] == [("resolve", "17.2")] and len(last.resolved) == 1
    assert [inv.command for inv in service.asked] == ["node-status"] * 4 and service.asked[0].cluster == "prod"
    (row,) = watcher.store.history(last.resolved[0])
    assert row.resolved_at is not None and row.resolved_at - row.opened_at == timedelta(minutes=30)


async def test_a_report_missing_more_than_node_reads_resolves_nothing(tmp_path: Path) -> None:
    """A sweep whose pod list failed (or whose deadline cut a loader) read every node and found no
    leak: that proves nothing, so nothing is resolved until a complete report says so."""
    partial = _report()
    partial.skip("pods", "the API answered 503")
    nodes_only = _report(unread=("gpu-2",))
    nodes_only.skip("physical checks on gpu-2", "ssh timeout")
    service = Reports(_report(_leak("gpu-1"), _leak("gpu-2")), partial, nodes_only, _report())
    notifier = Recorder()
    watcher = Watcher(
        WatchConfig(cluster="prod", channel="C1", enabled=True),
        service,
        open_sqlite(tmp_path / "s.db").problems,
        notifier,
    )
    await watcher.sweep()
    assert (await watcher.sweep()).resolved == []
    assert len((await watcher.sweep()).resolved) == 1  # gpu-1 read and clean; gpu-2 unread stays open
    assert len((await watcher.sweep()).resolved) == 1
    assert [c[0] for c in notifier.calls] == ["post", "post", "resolve", "resolve"]


async def test_a_failed_post_stays_an_intent_and_is_retried_once(tmp_path: Path) -> None:
    service = Reports(_report(_leak("gpu-1")), _report(_leak("gpu-1")), _report(_leak("gpu-1")))
    notifier = Recorder()
    store = open_sqlite(tmp_path / "state.db").problems
    watcher = Watcher(WatchConfig(cluster="prod", channel="C1", enabled=True), service, store, notifier)
    notifier.fail = True
    failed = await watcher.sweep()
    # recorded before the post (a stop mid-post must not post twice), without a message
    assert len(failed.failed) == 1 and [r.posting for r in store.open_problems("prod", "C1").values()] == [True]
    notifier.fail = False
    await watcher.sweep()
    await watcher.sweep()
    assert notifier.calls == [("post", "node/gpu-1")]


def test_the_words_of_changes_and_durations() -> None:
    before = problems_from_report(_report(_leak("gpu-1")), cluster="prod", codes=DEFAULT_WATCH_CODES)[0]
    changed = _report(_leak("gpu-1", count=2, evidence="busy"))
    after = problems_from_report(changed, cluster="prod", codes=["CHECKPOINT_ZOMBIE"])[0]
    text = render_change(before, after).blocks[0]["text"]["text"]
    assert "2 pod(s)" in text and "+ gpu-1: busy" in text and "− gpu-1: idle" in text
    assert lasted(timedelta(seconds=30)) == "under a minute"
    assert lasted(timedelta(days=1, hours=2, minutes=5)) == "1 d 2 h 5 min"
    assert lasted(timedelta(hours=3)) == "3 h"


def test_the_open_message_carries_three_snooze_buttons_within_slacks_limits() -> None:
    long = _report(_leak("gpu-1", evidence="x" * 5000))
    problem = problems_from_report(long, cluster="prod", codes=["CHECKPOINT_ZOMBIE"])[0]
    now = datetime(2026, 5, 1, tzinfo=UTC)
    rendered = render_open(problem, opened_at=now, seen_at=now)
    assert_within_limits(rendered)
    (buttons,) = [b for b in rendered.blocks if b["type"] == "actions"]
    assert [e["value"] for e in buttons["elements"]] == [f"{c}:{problem.fingerprint}" for c in ("1h", "1d", "resolved")]
    assert_within_limits(render_resolved(problem, opened_at=now, resolved_at=now + timedelta(hours=2)))
