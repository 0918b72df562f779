"""One behaviour, two backends: every store of gpubot's state keeps the same promises on the
SQLite file and on the Kubernetes API.

Every test here runs against both ``state: sqlite`` (``open_sqlite``) and ``state: kubernetes``
(``open_kube``: the simulated API server over HTTP through the official client, its clock set by
hand like the SQLite store's), through the ``bot.state.contracts`` interfaces only:

- ``PendingStore``: a claim wins once, expiry and heartbeats follow the store's clock (the API
  server's), one running action per node, takeover of what nobody renews;
- ``AuditLog``: append-only, readable from any replica;
- ``SeenRequests``: retry keys seen once per TTL by every replica;
- ``ProblemStore`` and ``AlertGroups``: the watch's memory, which a new leader must find;
- ``Leader``: the replica that runs its leadership leads and runs the singletons.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from bot.errors import StateStoreError
from bot.state import kube_audit
from bot.state.ids import new_action_id
from bot.state.kube_audit import KubeAuditLog
from bot.state.kube_watch import KubeProblemStore
from bot.state.opening import Stores, open_kube, open_sqlite
from bot.state.records import Problem
from tests.replicas.conftest import T0, ManualClock, StateSim
from tests.unit.test_confirm_store import make

SECOND_OWNER = "replica-b:2:bb"
CHANNEL = "C0WATCH"


@dataclass
class Backend:
    """One state backend as one replica sees it, and more replicas of it."""

    name: str
    clock: ManualClock
    #: this replica's stores
    stores: Stores
    #: another replica's view of the same state (its own connections)
    replica: Callable[[], Stores]

    @property
    def store(self) -> Any:
        return self.stores.store

    @property
    def audit(self) -> Any:
        return self.stores.audit


@pytest.fixture(params=["sqlite", "kubernetes"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, start_state_sim: Callable[..., StateSim]
) -> Iterator[Backend]:
    clock = ManualClock()
    opened: list[Stores] = []
    if request.param == "sqlite":
        path = tmp_path / "state.db"

        def replica() -> Stores:
            opened.append(open_sqlite(path, clock=clock))
            return opened[-1]

    else:
        sim = start_state_sim(clock=clock)
        clients = []

        def replica() -> Stores:
            api = config.new_client_from_config(config_file=str(sim.kubeconfig))
            clients.append(api)
            opened.append(open_kube(StateSim(sim.server, sim.kubeconfig, api).state(), identity=f"r-{len(opened)}"))
            return opened[-1]

    yield Backend(request.param, clock, replica(), replica)
    for stores in opened:
        stores.close()
    if request.param == "kubernetes":
        for api in clients:
            api.close()


# -- records and transitions ----------------------------------------------------------------


def test_create_and_get_round_trip(backend: Backend) -> None:
    store = backend.store
    record = store.create(make(params={"node": "gpu-1", "namespace": "ml"}))
    got = store.get(record.id)
    assert got == record
    assert got is not None and (got.created_at, got.expires_at) == (T0, T0 + timedelta(seconds=900))
    assert got.state == "pending" and got.approved_by is None and got.target == "node/gpu-1"
    assert got.finding_code == "KUBELET_CHECKPOINT_ZOMBIE" and got.channel == "C0CHAN"
    assert store.get(new_action_id()) is None


def test_claim_moves_pending_to_running_once_and_replicas_agree(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    other = backend.replica().store
    record = store.create(make())
    clock.now = T0 + timedelta(seconds=5)
    first = store.claim(record.id, approver="U0APPROVE", owner="replica-a:1:aa")
    assert first.claimed and first.state == "running"
    assert first.action is not None and first.action.approved_by == "U0APPROVE"
    assert (first.action.owner, first.action.heartbeat_at) == ("replica-a:1:aa", clock.now)
    second = other.claim(record.id, approver="U0OTHER", owner=SECOND_OWNER)
    assert second.status == "already_taken" and second.state == "running"
    assert other.get(record.id).approved_by == "U0APPROVE"  # type: ignore[union-attr]


def test_claim_unknown_id(backend: Backend) -> None:
    result = backend.store.claim(new_action_id(), approver="U0APPROVE")
    assert result.status == "unknown" and result.action is None and result.state is None


@pytest.mark.parametrize("late_by_s", [0, 1, 86400])
def test_claim_after_expiry_expires_the_record(backend: Backend, late_by_s: int) -> None:
    store, clock = backend.store, backend.clock
    record = store.create(make(ttl_s=60))
    clock.now = T0 + timedelta(seconds=60 + late_by_s)
    result = store.claim(record.id, approver="U0APPROVE")
    assert result.status == "expired" and result.state == "expired"
    after = store.get(record.id)
    assert after is not None and after.state == "expired" and after.approved_by is None
    assert after.finished_at == clock.now
    clock.now = T0  # and it stays dead, even if the clock went back
    assert store.claim(record.id, approver="U0APPROVE").state == "expired"


def test_claim_just_before_expiry_succeeds(backend: Backend) -> None:
    record = backend.store.create(make(ttl_s=60))
    backend.clock.now = T0 + timedelta(seconds=59)
    assert backend.store.claim(record.id, approver="U0A").claimed


def test_finish_only_from_running(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    record = store.create(make())
    assert store.finish(record.id, "succeeded", "done") is None  # still pending
    store.claim(record.id, approver="U0A")
    clock.now = T0 + timedelta(minutes=1)
    done = store.finish(record.id, "succeeded", "kubelet restarted; node Ready")
    assert done is not None and done.state == "succeeded" and done.finished_at == clock.now
    assert done.result_summary == "kubelet restarted; node Ready"
    assert store.finish(record.id, "failed", "again") is None
    with pytest.raises(ValueError):
        store.finish(record.id, "pending", "no")


def test_set_message_remembers_where_the_offer_is(backend: Backend) -> None:
    store = backend.store
    record = store.create(make())
    store.set_message(record.id, channel="C0OTHER", message_ts="1700000000.000100", thread_ts="1700000000.0")
    got = store.get(record.id)
    assert got is not None and got.state == "pending"
    assert (got.channel, got.message_ts, got.thread_ts) == ("C0OTHER", "1700000000.000100", "1700000000.0")


def test_the_message_blocks_of_a_running_offer_are_shared_state(backend: Backend) -> None:
    """Issue 29: whoever ends a run (another replica restoring it) edits its status line from the
    blocks the announcing process kept in the shared state, not from that process's memory."""
    store = backend.store
    other = backend.replica().store
    record = store.create(make())
    store.set_message(record.id, channel="C0OTHER", message_ts="1700000000.000100")
    blocks = '[{"type": "section", "block_id": "status-x", "text": {"type": "mrkdwn", "text": "running"}}]'
    assert store.claim(record.id, approver="U0A", owner="replica-a:1:aa").claimed
    store.set_blocks(record.id, blocks)
    seen = other.get(record.id)
    assert seen is not None and seen.message_blocks == blocks and seen.message_ts == "1700000000.000100"
    ended = other.finish(record.id, "interrupted", "restored")
    assert ended is not None and ended.message_blocks == blocks and ended.channel == "C0OTHER"


def test_expire_overdue_only_touches_overdue_pending(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    old = store.create(make(ttl_s=60))
    fresh = store.create(make(ttl_s=3600))
    running = store.create(make(ttl_s=60, params={"node": "gpu-2"}))
    store.claim(running.id, approver="U0A")
    clock.now = T0 + timedelta(seconds=120)
    expired = store.expire_overdue()
    assert [r.id for r in expired] == [old.id] and expired[0].state == "expired"
    assert store.get(fresh.id).state == "pending"  # type: ignore[union-attr]
    assert store.get(running.id).state == "running"  # type: ignore[union-attr]
    assert store.expire_overdue() == []


def test_list_filters_orders_and_limits(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    records = []
    for i in range(5):
        clock.now = T0 + timedelta(seconds=i)
        records.append(store.create(make(now=clock.now, params={"node": f"gpu-{i}"})))
    store.claim(records[1].id, approver="U0A")
    assert [r.id for r in store.list()] == [r.id for r in reversed(records)]
    assert [r.id for r in store.list(limit=2)] == [records[4].id, records[3].id]
    assert [r.id for r in store.list(states=["running"])] == [records[1].id]
    assert store.list(states=[]) == []
    with pytest.raises(ValueError):
        store.list(states=["bogus"])


def test_one_running_action_per_node_across_replicas(backend: Backend) -> None:
    store = backend.store
    other = backend.replica().store
    restart = store.create(make(action="kubelet.restart", params={"node": "gpu-1"}))
    clear = store.create(make(action="checkpoint.clear", params={"node": "gpu-1"}))
    other_node = store.create(make(action="checkpoint.clear", params={"node": "gpu-2"}))
    other_cluster = store.create(make(action="checkpoint.clear", params={"node": "gpu-1"}, cluster="lab"))
    pod = store.create(make(action="pod.delete", params={"namespace": "ml", "pod": "p"}))
    assert store.claim(restart.id, approver="U0A", owner="o:1:aa").claimed
    busy = other.claim(clear.id, approver="U0B", owner="o:2:bb")
    assert busy.status == "busy" and busy.state == "pending"
    assert busy.holder is not None and (busy.holder.id, busy.holder.approved_by) == (restart.id, "U0A")
    assert store.get(clear.id).state == "pending"  # type: ignore[union-attr]  # clickable again later
    assert other.claim(other_node.id, approver="U0B").claimed
    assert other.claim(other_cluster.id, approver="U0B").claimed
    assert other.claim(pod.id, approver="U0B").claimed
    store.finish(restart.id, "succeeded", "done")
    assert other.claim(clear.id, approver="U0B").claimed  # the node is free again


def test_progress_and_heartbeats_only_by_the_owner(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    record = store.create(make())
    with pytest.raises(StateStoreError):
        store.save_progress(record.id, "o:1:aa", {"step": "cordon"})  # not running yet
    store.claim(record.id, approver="U0A", owner="o:1:aa")
    clock.now = T0 + timedelta(seconds=9)
    store.save_progress(record.id, "o:1:aa", {"step": "stop", "kubelet_down": True})
    got = store.get(record.id)
    assert got is not None and got.progress == {"step": "stop", "kubelet_down": True}
    assert got.heartbeat_at == clock.now  # writing progress renews the claim
    with pytest.raises(StateStoreError, match="no longer running under this process"):
        store.save_progress(record.id, "o:2:bb", {"step": "mv"})
    assert store.heartbeat(record.id, "o:1:aa") and not store.heartbeat(record.id, "o:2:bb")


def test_a_lost_replica_is_taken_over_only_after_its_lease(backend: Backend) -> None:
    store, clock = backend.store, backend.clock
    survivor = backend.replica().store
    waiting = store.create(make(params={"node": "gpu-1"}))
    cut_off = store.create(make(params={"node": "gpu-2"}))
    live = store.create(make(params={"node": "gpu-3"}))
    store.claim(cut_off.id, approver="U0A", owner="dead:1:aa")
    store.claim(live.id, approver="U0A", owner="live:2:bb")
    assert survivor.take_over_stale("new:3:cc", lease_s=30) == []  # both may still be alive
    clock.now = T0 + timedelta(seconds=20)
    assert store.heartbeat(live.id, "live:2:bb")
    clock.now = T0 + timedelta(seconds=31)
    taken = survivor.take_over_stale("new:3:cc", lease_s=30)
    assert [r.id for r in taken] == [cut_off.id]
    assert taken[0].state == "running" and taken[0].owner == "new:3:cc" and taken[0].approved_by == "U0A"
    assert survivor.take_over_stale("other:4:dd", lease_s=30) == []
    assert survivor.get(waiting.id).state == "pending"  # type: ignore[union-attr]
    done = survivor.finish(cut_off.id, "interrupted", "restored: node schedulable")
    assert done is not None and done.state == "interrupted"
    assert survivor.claim(cut_off.id, approver="U0A").state == "interrupted"  # never picked up again


def test_fifty_threads_on_two_replicas_claim_once(backend: Backend) -> None:
    replicas = [backend.store, backend.replica().store]
    record = backend.store.create(make())
    barrier = threading.Barrier(50)
    results: list[str] = []

    def click(n: int) -> None:
        barrier.wait()
        results.append(replicas[n % 2].claim(record.id, approver=f"U{n}", owner=f"o:{n}:x").status)

    threads = [threading.Thread(target=click, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Counter(results) == {"claimed": 1, "already_taken": 49}


# -- the audit trail ------------------------------------------------------------------------


def test_audit_append_and_query_from_any_replica(backend: Backend) -> None:
    audit, clock = backend.audit, backend.clock
    other_audit = backend.replica().audit
    first, second = new_action_id(), new_action_id()
    audit.append("offer", action_id=first, action="kubelet.restart", actor="U1", target="node/gpu-1")
    clock.now = T0 + timedelta(minutes=5)
    other_audit.append("approve", action_id=first, actor="U2", outcome="approved", detail={"reason": "ok"})
    other_audit.append("offer", action_id=second, actor="U1")
    entries = audit.query()
    assert [(e.event, e.action_id) for e in entries] == [("offer", first), ("approve", first), ("offer", second)]
    assert entries[0].ts == T0 and entries[1].ts == clock.now and entries[1].detail == {"reason": "ok"}
    assert entries[0].id < entries[1].id < entries[2].id
    assert [e.event for e in audit.query(action_id=first)] == ["offer", "approve"]
    assert [e.action_id for e in audit.query(since=T0 + timedelta(minutes=1))] == [first, second]
    assert [e.action_id for e in audit.query(limit=1)] == [second]
    with pytest.raises(ValueError):
        audit.append("bogus")


def test_kube_audit_records_of_one_second_whose_names_collide_are_all_written(
    start_state_sim: Callable[..., StateSim], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Kubernetes backend names a record by the server's whole second and a random suffix
    (SQLite numbers its rows): two records of one second drawing the same suffix (a real risk
    with 24 bits and fifty clicks a second) must both be kept, the second under a fresh suffix,
    never dropped with an error."""
    audit = KubeAuditLog(start_state_sim(clock=ManualClock()).state())
    draws = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(kube_audit.secrets, "token_hex", lambda n: next(draws))
    action_id = new_action_id()
    audit.append("offer", action_id=action_id, actor="U1")
    audit.append("refuse", action_id=action_id, actor="U2", outcome="refused")  # two taken draws, then b
    assert [(e.event, e.actor) for e in audit.query(action_id=action_id)] == [("offer", "U1"), ("refuse", "U2")]


# -- retry keys -----------------------------------------------------------------------------


def test_retry_keys_are_seen_once_by_every_replica_until_they_expire(backend: Backend) -> None:
    a, b = backend.stores.seen, backend.replica().seen  # both with the default TTL, 600 s
    assert a.first("command:trigger_id:1") is True
    assert b.first("command:trigger_id:1") is False
    assert a.first("command:trigger_id:1") is False
    assert b.first("command:trigger_id:2") is True
    backend.clock.now = T0 + timedelta(seconds=601)
    assert b.first("command:trigger_id:1") is True  # forgotten after the TTL
    assert a.first("command:trigger_id:1") is False


# -- the watch's memory ---------------------------------------------------------------------


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


def test_problems_open_change_resolve_and_reopen_as_every_replica_sees_them(backend: Backend) -> None:
    store, other = backend.stores.problems, backend.replica().problems
    p = problem()
    store.opened(p, channel=CHANNEL, message_ts="1.1", at=T0)
    with pytest.raises(Exception):  # noqa: B017 - one open post per problem and channel, whatever the backend says
        other.opened(p, channel=CHANNEL, message_ts="1.2", at=T0)
    rows = other.open_problems("prod", CHANNEL)
    assert list(rows) == [p.fingerprint] and rows[p.fingerprint].message_ts == "1.1"
    assert rows[p.fingerprint].digest == p.digest and rows[p.fingerprint].problem == p
    assert store.open_problems("lab", CHANNEL) == {} and store.open_problems("prod", "C0OTHER") == {}
    worse = problem(evidence=("two GPUs gone",))
    store.changed(worse, channel=CHANNEL, at=T0 + timedelta(minutes=1))
    row = other.open_problems("prod", CHANNEL)[p.fingerprint]
    assert row.problem.evidence == ("two GPUs gone",) and row.updated_at == T0 + timedelta(minutes=1)
    store.resolved(p.fingerprint, channel=CHANNEL, at=T0 + timedelta(minutes=2))
    assert other.open_problems("prod", CHANNEL) == {}
    store.opened(p, channel=CHANNEL, message_ts="1.3", at=T0 + timedelta(minutes=3))  # it came back
    history = other.history(p.fingerprint)
    assert [(h.message_ts, h.resolved_at) for h in history] == [
        ("1.1", T0 + timedelta(minutes=2)),
        ("1.3", None),
    ]
    assert store.posts_since(CHANNEL, T0 - timedelta(seconds=1)) == 2
    assert store.posts_since(CHANNEL, T0 + timedelta(minutes=2)) == 1


def test_an_intent_is_recorded_before_its_post_and_completed_after(backend: Backend) -> None:
    store = backend.stores.problems
    p = problem()
    store.intend(p, channel=CHANNEL, at=T0)
    (row,) = backend.replica().problems.open_problems("prod", CHANNEL).values()
    assert row.posting and row.message_ts == ""
    store.posted(p.fingerprint, channel=CHANNEL, message_ts="1.9")
    (row,) = store.open_problems("prod", CHANNEL).values()
    assert not row.posting and row.message_ts == "1.9"


def test_snoozes_and_summaries(backend: Backend) -> None:
    store = backend.stores.problems
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
    assert backend.replica().problems.summary(CHANNEL) == ("9.1", T0, "def")


def test_alert_groups_are_remembered_per_channel_by_every_replica(backend: Backend) -> None:
    groups, other = backend.stores.alert_groups, backend.replica().alert_groups
    key = '{}:{alertname="XidError"}'
    assert groups.known(key, CHANNEL) is None
    groups.remember(key, CHANNEL, "1.1", "d1")
    groups.remember(key, "C0OTHER", "2.1", "d1")
    other.remember(key, CHANNEL, "1.1", "d2")
    assert groups.known(key, CHANNEL) == ("1.1", "d2") and other.known(key, "C0OTHER") == ("2.1", "d1")


def test_the_kubernetes_memory_forgets_old_history_spent_snoozes_and_stale_groups(
    start_state_sim: Callable[..., StateSim],
) -> None:
    """Only the shared records need a cleanup (the leader's sweep); the file's tables are small."""
    clock = ManualClock()
    store = KubeProblemStore(start_state_sim(clock=clock).state(), retention=timedelta(days=30))
    p = problem()
    store.opened(p, channel=CHANNEL, message_ts="1.1", at=T0)
    store.resolved(p.fingerprint, channel=CHANNEL, at=T0)
    store.opened(p, channel=CHANNEL, message_ts="1.2", at=T0 + timedelta(days=1))
    store.snooze("a", channel=CHANNEL, until=T0 + timedelta(hours=1), by="U1", at=T0)
    store.snooze("b", channel=CHANNEL, until=None, by="U1", at=T0)
    store.remember('{}:{alertname="XidError"}', CHANNEL, "1.1", "d1")
    assert store.sweep(T0 + timedelta(days=2)) == 1  # the spent snooze
    assert store.sweep(T0 + timedelta(days=31)) == 2  # the month-old resolved row and alert group
    assert [h.message_ts for h in store.history(p.fingerprint)] == ["1.2"]  # the open one stays
    assert store.snoozed("b", channel=CHANNEL, now=T0 + timedelta(days=31))
    assert store.known('{}:{alertname="XidError"}', CHANNEL) is None


# -- leadership -----------------------------------------------------------------------------


async def test_a_replica_that_seeks_leadership_leads_and_runs_the_singletons(backend: Backend) -> None:
    leader = backend.stores.leader
    stop, ran = asyncio.Event(), asyncio.Event()

    async def singleton() -> None:
        ran.set()
        await asyncio.Event().wait()

    seeking = asyncio.create_task(leader.run(stop))
    singletons = asyncio.create_task(leader.run_while_leader(singleton))
    try:
        await asyncio.wait_for(ran.wait(), 30)
        assert leader.is_leader()
    finally:
        singletons.cancel()
        stop.set()
        await asyncio.wait_for(seeking, 30)
        await asyncio.gather(singletons, return_exceptions=True)
