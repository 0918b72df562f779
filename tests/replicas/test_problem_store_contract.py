"""The watch's memory keeps the same promises in the state file and on the Kubernetes API.

With ``state: kubernetes`` a replica that takes leadership over must find every problem the old
leader posted (or it would post them again); these run the SQLite ``ProblemStore`` and the
``GpuWatchRecord`` store through the same sequence: open, change, resolve, reopen, snooze,
summaries, the hourly post count, and the cleanup of old history.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.proactive.alerts import SqliteAlertGroups
from bot.proactive.kube_store import KubeProblemStore
from bot.proactive.problems import Problem
from bot.proactive.store import ProblemStore
from tests.replicas.conftest import T0, ManualClock, StateSim

CHANNEL = "C0WATCH"


def problem(fp: str = "gpu-lost/node-1", **kw: Any) -> Problem:
    fields: dict[str, Any] = {
        "fingerprint": fp,
        "cluster": "prod",
        "code": "GPU_LOST",
        "severity": "critical",
        "subject": "node-1",
        "title": "GPU lost on node-1",
        "evidence": ("nvidia-smi: GPU has fallen off the bus",),
    }
    fields.update(kw)
    return Problem(**fields)


@pytest.fixture(params=["sqlite", "kubernetes"])
def store(request: pytest.FixtureRequest, tmp_path: Path, start_state_sim: Callable[..., StateSim]) -> Any:
    if request.param == "sqlite":
        return ProblemStore(tmp_path / "state.db")
    return KubeProblemStore(start_state_sim().state())


def test_open_change_resolve_and_reopen(store: Any) -> None:
    p = problem()
    store.opened(p, channel=CHANNEL, message_ts="1.1", at=T0)
    with pytest.raises(Exception):  # noqa: B017 - one open post per problem and channel, whatever the backend says
        store.opened(p, channel=CHANNEL, message_ts="1.2", at=T0)
    rows = store.open_problems("prod", CHANNEL)
    assert list(rows) == [p.fingerprint] and rows[p.fingerprint].message_ts == "1.1"
    assert rows[p.fingerprint].digest == p.digest and rows[p.fingerprint].problem == p
    assert store.open_problems("lab", CHANNEL) == {} and store.open_problems("prod", "C0OTHER") == {}
    worse = problem(evidence=("two GPUs gone",))
    store.changed(worse, channel=CHANNEL, at=T0 + timedelta(minutes=1))
    row = store.open_problems("prod", CHANNEL)[p.fingerprint]
    assert row.problem.evidence == ("two GPUs gone",) and row.updated_at == T0 + timedelta(minutes=1)
    store.resolved(p.fingerprint, channel=CHANNEL, at=T0 + timedelta(minutes=2))
    assert store.open_problems("prod", CHANNEL) == {}
    store.opened(p, channel=CHANNEL, message_ts="1.3", at=T0 + timedelta(minutes=3))  # it came back
    history = store.history(p.fingerprint)
    assert [(h.message_ts, h.resolved_at) for h in history] == [
        ("1.1", T0 + timedelta(minutes=2)),
        ("1.3", None),
    ]
    assert store.posts_since(CHANNEL, T0 - timedelta(seconds=1)) == 2
    assert store.posts_since(CHANNEL, T0 + timedelta(minutes=2)) == 1


def test_snoozes_and_summaries(store: Any) -> None:
    fp = "gpu-lost/node-2"
    assert not store.snoozed(fp, channel=CHANNEL, now=T0)
    store.snooze(fp, channel=CHANNEL, until=T0 + timedelta(hours=1), by="U1", at=T0)
    assert store.snoozed(fp, channel=CHANNEL, now=T0 + timedelta(minutes=59))
    assert not store.snoozed(fp, channel=CHANNEL, now=T0 + timedelta(hours=1))
    assert not store.snoozed(fp, channel="C0OTHER", now=T0)
    store.snooze(fp, channel=CHANNEL, until=None, by="U1", at=T0)  # until it resolves
    assert store.snoozed(fp, channel=CHANNEL, now=T0 + timedelta(days=9))
    store.end_snoozes_until_resolved(fp, channel=CHANNEL)
    assert not store.snoozed(fp, channel=CHANNEL, now=T0)
    assert store.summary(CHANNEL) is None
    store.summarised(CHANNEL, message_ts="9.1", window_start=T0, digest="abc")
    store.summarised(CHANNEL, message_ts="9.1", window_start=T0, digest="def")
    assert store.summary(CHANNEL) == ("9.1", T0, "def")


def test_the_kubernetes_memory_forgets_old_history_and_spent_snoozes(
    start_state_sim: Callable[..., StateSim],
) -> None:
    store = KubeProblemStore(start_state_sim().state(), retention=timedelta(days=30))
    p = problem()
    store.opened(p, channel=CHANNEL, message_ts="1.1", at=T0)
    store.resolved(p.fingerprint, channel=CHANNEL, at=T0)
    store.opened(p, channel=CHANNEL, message_ts="1.2", at=T0 + timedelta(days=1))
    store.snooze("a", channel=CHANNEL, until=T0 + timedelta(hours=1), by="U1", at=T0)
    store.snooze("b", channel=CHANNEL, until=None, by="U1", at=T0)
    assert store.sweep(T0 + timedelta(days=2)) == 1  # the spent snooze
    assert store.sweep(T0 + timedelta(days=31)) == 1  # the month-old resolved row
    assert [h.message_ts for h in store.history(p.fingerprint)] == ["1.2"]  # the open one stays
    assert store.snoozed("b", channel=CHANNEL, now=T0 + timedelta(days=31))


@pytest.fixture(params=["sqlite", "kubernetes"])
def alert_groups(request: pytest.FixtureRequest, tmp_path: Path, start_state_sim: Callable[..., StateSim]) -> Any:
    """The Alertmanager desk's memory: the state file's table, or records a new leader reads."""
    if request.param == "sqlite":
        return SqliteAlertGroups(tmp_path / "state.db")
    clock = ManualClock()
    return KubeProblemStore(start_state_sim(clock=clock).state()), clock


def test_alert_groups_are_remembered_per_channel_and_swept_when_stale(alert_groups: Any) -> None:
    groups, clock = alert_groups if isinstance(alert_groups, tuple) else (alert_groups, None)
    key = '{}:{alertname="XidError"}'
    assert groups.known(key, CHANNEL) is None
    groups.remember(key, CHANNEL, "1.1", "d1")
    groups.remember(key, "C0OTHER", "2.1", "d1")
    groups.remember(key, CHANNEL, "1.1", "d2")
    assert groups.known(key, CHANNEL) == ("1.1", "d2") and groups.known(key, "C0OTHER") == ("2.1", "d1")
    if clock is not None:  # only the shared records need a cleanup; the file's table is small
        assert groups.sweep(clock.now + timedelta(days=1)) == 0
        assert groups.sweep(clock.now + groups.retention + timedelta(minutes=1)) == 2
        assert groups.known(key, CHANNEL) is None
