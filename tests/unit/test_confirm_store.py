"""What only the SQLite store and audit trail do: the file (WAL, schema versions, migration, an
unwritable disk), restarts, two processes on one file, immutable audit rows, and the audit text.

The state transitions both backends share (create, claim once, expiry by the store's clock,
finish, the per-node lock, progress by the owner, races) run over SQLite and the Kubernetes API
alike in ``tests/state/test_store_contracts.py``."""

from __future__ import annotations

import json
import multiprocessing
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import bot.remediation
from bot.errors import ConfigError, StateStoreError, UsageError
from bot.remediation.audit import format_audit, parse_since
from bot.state.ids import new_action_id
from bot.state.opening import open_sqlite
from bot.state.records import AuditEntry, PendingAction
from bot.state.sqlite import SqliteDatabase
from bot.state.sqlite_actions import SqlitePendingStore
from bot.state.sqlite_audit import SqliteAuditLog
from bot.state.sqlite_requests import SqliteSeenRequests

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


def make(now: datetime = T0, ttl_s: int = 900, **kw: object) -> PendingAction:
    fields: dict[str, object] = {
        "id": new_action_id(),
        "action": "kubelet.restart",
        "params": {"node": "gpu-1"},
        "cluster": "prod",
        "requested_by": "U0REQUEST",
        "created_at": now,
        "expires_at": now + timedelta(seconds=ttl_s),
        "channel": "C0CHAN",
        "finding_code": "KUBELET_CHECKPOINT_ZOMBIE",
    }
    fields.update(kw)
    return PendingAction(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "gpubot.db"


class Clock:
    """The store's clock, set by hand."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def state(db_path: Path, clock: Clock) -> Iterator[tuple[SqlitePendingStore, SqliteAuditLog]]:
    store, audit = open_sqlite(db_path, clock=clock).actions()
    yield store, audit
    store.db.close()


@pytest.fixture
def store(state: tuple[SqlitePendingStore, SqliteAuditLog]) -> SqlitePendingStore:
    return state[0]


@pytest.fixture
def audit(state: tuple[SqlitePendingStore, SqliteAuditLog]) -> SqliteAuditLog:
    return state[1]


# -- records and transitions ----------------------------------------------------------------


def test_ids_are_never_reused(store: SqlitePendingStore) -> None:
    record = store.create(make())
    with pytest.raises(sqlite3.IntegrityError):
        store.create(make(id=record.id))


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        make(now=datetime(2026, 11, 30, 10, 0, 0))


def test_expiry_is_decided_by_the_store_clock_whatever_the_caller_believes(
    store: SqlitePendingStore, clock: Clock
) -> None:
    record = store.create(make(ttl_s=900))
    clock.now = T0 + timedelta(minutes=16)
    # the claim carries no time of its own: a replica 20 minutes slow cannot pass one in
    assert store.claim(record.id, approver="U0A").status == "expired"


def test_file_is_in_wal_mode(store: SqlitePendingStore, db_path: Path) -> None:
    store.create(make())
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_in_memory_database_is_refused() -> None:
    with pytest.raises(ConfigError, match="in-memory"):
        open_sqlite(":memory:")


def test_unopenable_path_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot open"):
        open_sqlite(blocker / "sub" / "state.db")


def test_newer_schema_is_refused(db_path: Path) -> None:
    store, _ = open_sqlite(db_path).actions()
    store.db.close()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="newer"):
        open_sqlite(db_path)


def test_restart_keeps_pending_and_takes_over_only_what_nobody_renews(db_path: Path, clock: Clock) -> None:
    store, audit = open_sqlite(db_path, clock=clock).actions()
    waiting = store.create(make(params={"node": "gpu-1"}))
    cut_off = store.create(make(params={"node": "gpu-2"}))
    live = store.create(make(params={"node": "gpu-3"}))
    store.claim(cut_off.id, approver="U0A", owner="dead:1:aa")
    store.claim(live.id, approver="U0A", owner="live:2:bb")
    audit.append("offer", action_id=waiting.id, ts=T0)
    store.db.close()  # the bot dies

    store2, audit2 = open_sqlite(db_path, clock=clock).actions()
    try:
        assert store2.take_over_stale("new:3:cc", lease_s=30) == []  # both may still be alive
        clock.now = T0 + timedelta(seconds=20)
        assert store2.heartbeat(live.id, "live:2:bb")  # the live one renews
        assert not store2.heartbeat(live.id, "dead:1:aa")  # nobody else can
        clock.now = T0 + timedelta(seconds=31)
        taken = store2.take_over_stale("new:3:cc", lease_s=30)
        assert [r.id for r in taken] == [cut_off.id]
        assert taken[0].state == "running" and taken[0].owner == "new:3:cc" and taken[0].approved_by == "U0A"
        assert store2.take_over_stale("other:4:dd", lease_s=30) == []  # now renewed by its new owner
        assert store2.get(waiting.id).state == "pending"  # type: ignore[union-attr]
        assert store2.get(live.id).owner == "live:2:bb"  # type: ignore[union-attr]
        done = store2.finish(cut_off.id, "interrupted", "restored: node schedulable")
        assert done is not None and done.state == "interrupted"
        assert store2.claim(cut_off.id, approver="U0A").state == "interrupted"  # never picked up again
        assert [e.event for e in audit2.query()] == ["offer"]
    finally:
        store2.db.close()


def test_a_record_nobody_owns_is_taken_over_at_once(store: SqlitePendingStore) -> None:
    record = store.create(make())
    store.claim(record.id, approver="U0A")  # no owner: no process renews it
    assert [r.id for r in store.take_over_stale("new:1:aa", lease_s=30)] == [record.id]


def test_an_unwritable_file_is_a_one_line_state_store_error(store: SqlitePendingStore, db_path: Path) -> None:
    record = store.create(make())
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TRIGGER full BEFORE UPDATE ON pending_actions "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.commit()
    conn.close()
    with pytest.raises(StateStoreError) as caught:
        store.claim(record.id, approver="U0A")
    assert caught.value.user_message == "the state file cannot be written or read (database or disk is full)"
    assert store.get(record.id).state == "pending"  # type: ignore[union-attr]  # nothing half-written


def test_a_version_1_file_is_migrated_in_place(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TABLE pending_actions (id TEXT PRIMARY KEY, action TEXT NOT NULL, params TEXT NOT NULL, "
        "cluster TEXT NOT NULL, requested_by TEXT NOT NULL, channel TEXT NOT NULL DEFAULT '', message_ts TEXT, "
        "thread_ts TEXT, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, state TEXT NOT NULL, "
        "approved_by TEXT, finished_at TEXT, result_summary TEXT, finding_code TEXT)"
    )
    conn.execute(
        "INSERT INTO pending_actions (id, action, params, cluster, requested_by, created_at, expires_at, state, "
        "approved_by) VALUES ('x' || hex(randomblob(15)), 'kubelet.restart', '{\"node\": \"gpu-1\"}', 'prod', "
        "'U0R', '2026-11-30T10:00:00.000000Z', '2026-11-30T10:15:00.000000Z', 'running', 'U0A')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store, _ = open_sqlite(db_path).actions()
    try:
        [old] = store.list(states=["running"])
        assert old.owner is None and old.progress == {}
        assert [r.id for r in store.take_over_stale("new:1:aa", lease_s=30)] == [old.id]  # a v1 run: nobody renews it
    finally:
        store.db.close()


def test_seen_requests_are_shared_by_every_process_on_the_file(db_path: Path, clock: Clock) -> None:
    one = SqliteSeenRequests(SqliteDatabase(db_path), ttl_s=600, clock=clock)
    two = SqliteSeenRequests(SqliteDatabase(db_path), ttl_s=600, clock=clock)
    try:
        assert one.first("command:trigger_id:1.2.3")
        assert not two.first("command:trigger_id:1.2.3")  # the retry reached the other replica
        assert two.first("command:trigger_id:4.5.6")
        clock.now = T0 + timedelta(seconds=601)
        assert one.first("command:trigger_id:1.2.3")  # forgotten after the TTL
    finally:
        one.close()
        two.close()


# -- races ----------------------------------------------------------------------------------


def _click_together(store: SqlitePendingStore, action_id: str, clickers: int) -> Counter[str]:
    barrier = threading.Barrier(clickers)
    results: list[str] = []
    lock = threading.Lock()

    def click(n: int) -> None:
        barrier.wait(timeout=30)
        status = store.claim(action_id, approver=f"U{n:04d}").status
        with lock:
            results.append(status)

    threads = [threading.Thread(target=click, args=(n,)) for n in range(clickers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    return Counter(results)


def _replica(path: str, ids: list[str], name: str, barrier: object, out: object) -> None:
    store, _ = open_sqlite(path).actions()
    barrier.wait(timeout=60)  # type: ignore[attr-defined]
    won = [i for i in ids if store.claim(i, approver=name).claimed]
    out.put((name, won))  # type: ignore[attr-defined]
    store.db.close()


def test_two_processes_racing_on_the_same_ids_claim_each_once(db_path: Path) -> None:
    store, _ = open_sqlite(db_path).actions()
    # the replicas decide expiry by the file's clock, this host's: offers made now
    now = datetime.now(UTC)
    ids = [store.create(make(now, params={"node": f"gpu-{n}"})).id for n in range(40)]
    store.db.close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_replica, args=(str(db_path), ids, name, barrier, out))
        for name in ("UREPA", "UREPB")
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    won = results["UREPA"] + results["UREPB"]
    assert sorted(won) == sorted(ids)  # every id claimed exactly once across both replicas
    store, _ = open_sqlite(db_path).actions()
    try:
        for action_id in ids:
            record = store.get(action_id)
            assert record is not None and record.state == "running"
            assert action_id in results[record.approved_by]  # type: ignore[index]
    finally:
        store.db.close()


# -- audit trail ----------------------------------------------------------------------------


def test_audit_append_and_query(audit: SqliteAuditLog) -> None:
    a = audit.append(
        "offer",
        action_id="x1",
        action="kubelet.restart",
        actor="U0R",
        cluster="prod",
        target="node/gpu-1",
        detail={"params": {"node": "gpu-1"}},
        outcome="offered",
        ts=T0,
    )
    audit.append(
        "refuse",
        action_id="x1",
        actor="U0X",
        detail={"reason": "no"},
        outcome="refused",
        ts=T0 + timedelta(minutes=5),
    )
    audit.append("offer", action_id="x2", ts=T0 + timedelta(hours=2))
    entries = audit.query()
    assert [e.event for e in entries] == ["offer", "refuse", "offer"]
    assert entries[0] == a and entries[0].detail == {"params": {"node": "gpu-1"}}
    assert [e.id for e in entries] == sorted(e.id for e in entries)
    assert [e.action_id for e in audit.query(since=T0 + timedelta(minutes=5))] == ["x1", "x2"]
    assert [e.event for e in audit.query(action_id="x1")] == ["offer", "refuse"]
    assert [e.action_id for e in audit.query(limit=2)] == ["x1", "x2"]  # the newest two, oldest first
    with pytest.raises(ValueError):
        audit.append("delete-everything")


def test_audit_survives_restart(db_path: Path) -> None:
    _, audit = open_sqlite(db_path).actions()
    audit.append("offer", action_id="x1", ts=T0)
    audit.db.close()
    _, audit2 = open_sqlite(db_path).actions()
    try:
        assert [e.action_id for e in audit2.query()] == ["x1"]
    finally:
        audit2.db.close()


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit SET outcome = 'ok'", "DELETE FROM audit", "DELETE FROM audit WHERE id = 1"],
)
def test_audit_rows_cannot_be_changed_or_deleted(
    audit: SqliteAuditLog, db_path: Path, statement: str
) -> None:
    audit.append("refuse", action_id="x1", detail={"reason": "not an approver"}, outcome="refused", ts=T0)
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(statement)
        conn.rollback()
        assert conn.execute("SELECT count(*), max(outcome) FROM audit").fetchone() == (1, "refused")
    finally:
        conn.close()


def test_no_code_updates_or_deletes_audit_rows() -> None:
    package = Path(bot.remediation.__file__).parent
    forbidden = re.compile(r"\b(UPDATE\s+audit|DELETE\s+FROM\s+audit|DROP\s+TRIGGER)\b", re.IGNORECASE)
    for source in package.glob("*.py"):
        assert not forbidden.search(source.read_text(encoding="utf-8")), source


# -- gpubot audit: --since and output -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", T0 - timedelta(minutes=30)),
        ("2h", T0 - timedelta(hours=2)),
        ("7d", T0 - timedelta(days=7)),
        ("45s", T0 - timedelta(seconds=45)),
        ("1w", T0 - timedelta(days=7)),
        ("2026-11-30T00:00:00Z", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T08:00:00+08:00", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T00:00:00", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert parse_since(text, T0) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "5y", "-1h", "1.5h", "2026-13-01", "x" * 500])
def test_parse_since_rejects_bad_input_in_one_line(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_since(text, T0)
    message = str(info.value)
    assert message.startswith("--since:") and "\n" not in message and len(message) < 200


def _entries() -> list[AuditEntry]:
    return [
        AuditEntry(
            1,
            T0,
            "offer",
            "abcdefghijkl",
            "kubelet.restart",
            "U0R",
            "prod",
            "node/gpu-1",
            {"params": {"node": "gpu-1"}},
            "offered",
        ),
        AuditEntry(
            2,
            T0 + timedelta(seconds=3),
            "refuse",
            "abcdefghijkl",
            "kubelet.restart",
            "U0X",
            "prod",
            "node/gpu-1",
            {"reason": "U0X is not an approver for kubelet.restart"},
            "refused",
        ),
    ]


def test_format_audit_json_lines() -> None:
    lines = format_audit(_entries(), as_json=True).splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["ts"] == "2026-11-30T10:00:00.000000Z" and first["event"] == "offer"
    assert second["detail"]["reason"] == "U0X is not an approver for kubelet.restart"
    assert set(first) == {
        "id",
        "ts",
        "event",
        "action_id",
        "action",
        "actor",
        "cluster",
        "target",
        "outcome",
        "detail",
    }
    assert format_audit([], as_json=True) == ""


def test_format_audit_human_table() -> None:
    lines = format_audit(_entries(), as_json=False).splitlines()
    assert lines[0].split() == [
        "time",
        "event",
        "action",
        "actor",
        "cluster",
        "target",
        "outcome",
        "id",
        "detail",
    ]
    assert lines[2].startswith("2026-11-30T10:00:03Z  refuse")
    assert lines[2].endswith("U0X is not an approver for kubelet.restart")
    assert "abcdefgh " in lines[1] and "abcdefghi" not in lines[1]
    assert lines[1].index("kubelet.restart") == lines[2].index("kubelet.restart")  # aligned columns
    assert format_audit([], as_json=False) == "no audit entries"
