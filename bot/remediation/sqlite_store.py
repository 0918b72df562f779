"""The embedded default store: pending actions, the audit trail and seen Slack requests in one
SQLite file (WAL).

Safe from many threads (one connection per thread) and from several processes on the same file
(two replicas on a shared volume): every state change runs inside ``BEGIN IMMEDIATE``, which
takes SQLite's single write lock, so the claim's checks (pending, not expired, node free) and its
``UPDATE`` are one atomic step; a partial unique index makes "one running action per node" a
fact of the file, not only of the code. Times are stored as fixed-width UTC text, so text
comparison is time comparison.

The store's clock is this host's (the clock of whoever holds the file): expiry and heartbeats are
measured with it, never with a time a caller passes in. Every SQLite error leaves here as
``StateStoreError`` with a one-line reason ("database or disk is full").

The audit table is append-only by construction: triggers abort any UPDATE or DELETE on it.
This module must never run an UPDATE or DELETE on ``audit``, and never hand a connection out.
"""

from __future__ import annotations

import builtins
import functools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from bot.errors import ConfigError, StateStoreError
from bot.remediation.audit import AUDIT_EVENTS, AuditEntry, format_ts, parse_ts
from bot.remediation.store import FINISH_STATES, STATES, ClaimResult, PendingAction, utc

SCHEMA_VERSION = 2
Clock = Callable[[], datetime]
_P = ParamSpec("_P")
_T = TypeVar("_T")
_STATE_LIST = ", ".join(f"'{s}'" for s in sorted(STATES))
_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS pending_actions (
        id TEXT PRIMARY KEY,
        action TEXT NOT NULL,
        params TEXT NOT NULL,
        cluster TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        channel TEXT NOT NULL DEFAULT '',
        message_ts TEXT,
        thread_ts TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ({_STATE_LIST})),
        approved_by TEXT,
        finished_at TEXT,
        result_summary TEXT,
        finding_code TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS pending_actions_state ON pending_actions (state, expires_at)",
    """CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,
        event TEXT NOT NULL,
        action_id TEXT NOT NULL DEFAULT '',
        action TEXT NOT NULL DEFAULT '',
        actor TEXT NOT NULL DEFAULT '',
        cluster TEXT NOT NULL DEFAULT '',
        target TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '{}',
        outcome TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts)",
    "CREATE INDEX IF NOT EXISTS audit_action_id ON audit (action_id)",
    """CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END""",
)
#: version 1 -> 2: owner and heartbeat of a running action, its state machine, the node lock,
#: and Slack requests already seen (retry de-duplication shared by every process on the file)
_SCHEMA_V2 = (
    "ALTER TABLE pending_actions ADD COLUMN owner TEXT",
    "ALTER TABLE pending_actions ADD COLUMN heartbeat_at TEXT",
    "ALTER TABLE pending_actions ADD COLUMN progress TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE pending_actions ADD COLUMN lock_key TEXT NOT NULL DEFAULT ''",
    """CREATE UNIQUE INDEX IF NOT EXISTS one_running_action_per_node ON pending_actions (lock_key)
        WHERE state = 'running' AND lock_key != ''""",
    "CREATE TABLE IF NOT EXISTS seen_requests (key TEXT PRIMARY KEY, seen_at TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS seen_requests_at ON seen_requests (seen_at)",
)


def _now() -> datetime:
    return datetime.now(UTC)


class SqliteDatabase:
    """One SQLite file, one connection per thread, the schema ensured on open."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 15.0) -> None:
        self.path = str(path)
        if self.path in ("", ":memory:") or self.path.startswith("file::memory:"):
            # Each thread's connection would get its own empty database.
            raise ConfigError("setting state_path: must be a file, not an in-memory database")
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            with self.transaction() as conn:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise ConfigError(
                        f"state file {self.path}: schema version {version} is newer than this gpubot"
                    )
                for statement in _SCHEMA:
                    conn.execute(statement)
                if version < 2:
                    for statement in _SCHEMA_V2:
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise ConfigError(f"state file {self.path}: cannot open ({exc})") from None

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so the write lock is taken
            # before the first read of a transaction and two writers can never both read "pending".
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"journal_mode is {mode}, WAL is required")
            # FULL: an approval or result that was reported must survive a power cut too.
            conn.execute("PRAGMA synchronous = FULL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # also when COMMIT itself failed (disk full): never leave the connection mid-transaction
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


def store_error(exc: sqlite3.Error) -> StateStoreError:
    """Our one-line error for an SQLite failure (``database or disk is full``, ``readonly``…)."""
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return StateStoreError(f"the state file cannot be written or read ({text})")


def _translated(fn: Callable[_P, _T]) -> Callable[_P, _T]:
    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return fn(*args, **kwargs)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE constraint failed: pending_actions.id" in str(exc):
                raise  # a reused id is a programming error, not a state-file problem
            raise store_error(exc) from None
        except sqlite3.Error as exc:
            raise store_error(exc) from None

    return wrapper


def _ts(text: str | None) -> datetime | None:
    return parse_ts(text) if text else None


def _row_to_action(row: sqlite3.Row) -> PendingAction:
    return PendingAction(
        id=row["id"],
        action=row["action"],
        params=json.loads(row["params"]),
        cluster=row["cluster"],
        requested_by=row["requested_by"],
        channel=row["channel"],
        message_ts=row["message_ts"],
        thread_ts=row["thread_ts"],
        created_at=parse_ts(row["created_at"]),
        expires_at=parse_ts(row["expires_at"]),
        state=row["state"],
        approved_by=row["approved_by"],
        finished_at=_ts(row["finished_at"]),
        result_summary=row["result_summary"],
        finding_code=row["finding_code"],
        owner=row["owner"] or None,
        heartbeat_at=_ts(row["heartbeat_at"]),
        progress=json.loads(row["progress"] or "{}"),
    )


class SqlitePendingStore:
    """``PendingStore`` on SQLite; ``clock`` replaces this host's clock (tests)."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock

    def now(self) -> datetime:
        return utc(self.clock()) if self.clock is not None else _now()

    @_translated
    def create(self, action: PendingAction) -> PendingAction:
        if action.state != "pending":
            raise ValueError("a new pending action must be in state 'pending'")
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO pending_actions (id, action, params, cluster, requested_by, channel, "
                "message_ts, thread_ts, created_at, expires_at, state, finding_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                (
                    action.id,
                    action.action,
                    json.dumps(dict(action.params), sort_keys=True),
                    action.cluster,
                    action.requested_by,
                    action.channel,
                    action.message_ts,
                    action.thread_ts,
                    format_ts(action.created_at),
                    format_ts(action.expires_at),
                    action.finding_code,
                ),
            )
        return action

    @_translated
    def get(self, action_id: str) -> PendingAction | None:
        row = self._row(self.db.connection(), action_id)
        return _row_to_action(row) if row is not None else None

    @staticmethod
    def _row(c: sqlite3.Connection, action_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = c.execute(
            "SELECT * FROM pending_actions WHERE id = ?", (action_id,)
        ).fetchone()
        return row

    @_translated
    def claim(self, action_id: str, *, approver: str, owner: str = "") -> ClaimResult:
        with self.db.transaction() as c:
            row = self._row(c, action_id)
            if row is None:
                return ClaimResult("unknown")
            record = _row_to_action(row)
            now = self.now()
            stamp = format_ts(now)
            if record.state != "pending":
                return ClaimResult("already_taken", record, record.state)
            if record.is_expired(now):
                c.execute(
                    "UPDATE pending_actions SET state = 'expired', finished_at = ?, "
                    "result_summary = 'expired before anyone approved it' WHERE id = ? AND state = 'pending'",
                    (stamp, action_id),
                )
                expired = _row_to_action(self._row(c, action_id))  # type: ignore[arg-type]
                return ClaimResult("expired", expired, expired.state)
            lock = record.lock_key
            if lock:
                holder = c.execute(
                    "SELECT * FROM pending_actions WHERE lock_key = ? AND state = 'running' AND id != ?",
                    (lock, action_id),
                ).fetchone()
                if holder is not None:
                    return ClaimResult("busy", record, record.state, holder=_row_to_action(holder))
            c.execute(
                "UPDATE pending_actions SET state = 'running', approved_by = ?, owner = ?, heartbeat_at = ?, "
                "lock_key = ?, progress = '{}' WHERE id = ? AND state = 'pending'",
                (approver, owner or None, stamp if owner else None, lock, action_id),
            )
            claimed = _row_to_action(self._row(c, action_id))  # type: ignore[arg-type]
        return ClaimResult("claimed", claimed, claimed.state)

    @_translated
    def heartbeat(self, action_id: str, owner: str) -> bool:
        with self.db.transaction() as c:
            done = c.execute(
                "UPDATE pending_actions SET heartbeat_at = ? WHERE id = ? AND owner = ? AND state = 'running'",
                (format_ts(self.now()), action_id, owner),
            ).rowcount
        return bool(done == 1)

    @_translated
    def save_progress(self, action_id: str, owner: str, progress: Mapping[str, Any]) -> None:
        text = json.dumps(dict(progress), sort_keys=True, default=str)
        with self.db.transaction() as c:
            done = c.execute(
                "UPDATE pending_actions SET progress = ?, heartbeat_at = ? "
                "WHERE id = ? AND owner IS ? AND state = 'running'",
                (text, format_ts(self.now()), action_id, owner or None),
            ).rowcount
        if done != 1:
            raise StateStoreError("the action is no longer running under this process; stopping")

    @_translated
    def finish(self, action_id: str, state: str, summary: str) -> PendingAction | None:
        if state not in FINISH_STATES:
            raise ValueError(f"finish: {state!r} is not one of {sorted(FINISH_STATES)}")
        with self.db.transaction() as c:
            done = c.execute(
                "UPDATE pending_actions SET state = ?, result_summary = ?, finished_at = ? "
                "WHERE id = ? AND state = 'running'",
                (state, summary, format_ts(self.now()), action_id),
            ).rowcount
            row = self._row(c, action_id)
        return _row_to_action(row) if done == 1 and row is not None else None

    @_translated
    def set_message(
        self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None
    ) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE pending_actions SET channel = ?, message_ts = ?, thread_ts = ? WHERE id = ?",
                (channel, message_ts, thread_ts, action_id),
            )

    @_translated
    def expire_overdue(self) -> builtins.list[PendingAction]:
        stamp = format_ts(self.now())
        with self.db.transaction() as c:
            ids = [
                r["id"]
                for r in c.execute(
                    "SELECT id FROM pending_actions WHERE state = 'pending' AND expires_at <= ?", (stamp,)
                )
            ]
            for action_id in ids:
                c.execute(
                    "UPDATE pending_actions SET state = 'expired', finished_at = ?, "
                    "result_summary = 'expired before anyone approved it' WHERE id = ? AND state = 'pending'",
                    (stamp, action_id),
                )
            rows = [self._row(c, i) for i in ids]
        return [_row_to_action(r) for r in rows if r is not None]

    @_translated
    def take_over_stale(self, owner: str, *, lease_s: float) -> builtins.list[PendingAction]:
        now = self.now()
        stale_before = format_ts(now - timedelta(seconds=lease_s))
        with self.db.transaction() as c:
            ids = [
                r["id"]
                for r in c.execute(
                    "SELECT id FROM pending_actions WHERE state = 'running' "
                    "AND (owner IS NULL OR heartbeat_at IS NULL OR heartbeat_at < ?) ORDER BY created_at",
                    (stale_before,),
                )
            ]
            for action_id in ids:
                c.execute(
                    "UPDATE pending_actions SET owner = ?, heartbeat_at = ? WHERE id = ? AND state = 'running'",
                    (owner, format_ts(now), action_id),
                )
            rows = [self._row(c, i) for i in ids]
        return [_row_to_action(r) for r in rows if r is not None]

    @_translated
    def list(self, *, states: Iterable[str] | None = None, limit: int = 100) -> builtins.list[PendingAction]:
        sql = "SELECT * FROM pending_actions"
        args: builtins.list[Any] = []
        if states is not None:
            wanted = builtins.list(states)
            unknown = set(wanted) - STATES
            if unknown:
                raise ValueError(f"unknown states {sorted(unknown)}")
            sql += f" WHERE state IN ({', '.join('?' * len(wanted))})" if wanted else " WHERE 0"
            args.extend(wanted)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        args.append(max(0, limit))
        return [_row_to_action(r) for r in self.db.connection().execute(sql, args)]


class SqliteSeenRequests:
    """Slack requests already handled, shared by every process on the file (retry de-duplication).

    ``first(key)`` inserts the key and says whether it was new; keys older than ``ttl_s`` are
    forgotten. Its writes skip the fsync the pending actions get (``synchronous=NORMAL`` on a
    connection of its own): losing a few keys to a power cut costs at most one duplicate answer.
    """

    def __init__(self, path: str | Path, *, ttl_s: float = 600.0, clock: Clock | None = None) -> None:
        self.path = str(path)
        self.ttl_s = ttl_s
        self.clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        SqliteDatabase(self.path).close()  # the schema (and its migration) exists before the first key

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @_translated
    def first(self, key: str) -> bool:
        now = self.clock() if self.clock is not None else _now()
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM seen_requests WHERE seen_at < ?", (format_ts(now - timedelta(seconds=self.ttl_s)),)
            )
            new = conn.execute(
                "INSERT OR IGNORE INTO seen_requests (key, seen_at) VALUES (?, ?)", (key[:512], format_ts(now))
            ).rowcount
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        return bool(new == 1)

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


class SqliteAuditLog:
    """``AuditLog`` on SQLite: INSERT and SELECT only."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock

    @_translated
    def append(
        self,
        event: str,
        *,
        action_id: str = "",
        action: str = "",
        actor: str = "",
        cluster: str = "",
        target: str = "",
        detail: Mapping[str, Any] | None = None,
        outcome: str = "",
        ts: datetime | None = None,
    ) -> AuditEntry:
        if event not in AUDIT_EVENTS:
            raise ValueError(f"unknown audit event {event!r}")
        when = utc(ts or (self.clock() if self.clock is not None else _now()))
        detail_dict = dict(detail or {})
        detail_json = json.dumps(detail_dict, sort_keys=True, default=str, ensure_ascii=False)
        cur = self.db.connection().execute(
            "INSERT INTO audit (ts, event, action_id, action, actor, cluster, target, detail, outcome) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (format_ts(when), event, action_id, action, actor, cluster, target, detail_json, outcome),
        )
        return AuditEntry(
            id=int(cur.lastrowid or 0),
            ts=when,
            event=event,
            action_id=action_id,
            action=action,
            actor=actor,
            cluster=cluster,
            target=target,
            detail=json.loads(detail_json),
            outcome=outcome,
        )

    @_translated
    def query(
        self, since: datetime | None = None, limit: int = 1000, *, action_id: str | None = None
    ) -> list[AuditEntry]:
        where: list[str] = []
        args: list[Any] = []
        if since is not None:
            where.append("ts >= ?")
            args.append(format_ts(utc(since)))
        if action_id is not None:
            where.append("action_id = ?")
            args.append(action_id)
        sql = "SELECT * FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(max(0, limit))
        rows = self.db.connection().execute(sql, args).fetchall()
        return [
            AuditEntry(
                id=r["id"],
                ts=parse_ts(r["ts"]),
                event=r["event"],
                action_id=r["action_id"],
                action=r["action"],
                actor=r["actor"],
                cluster=r["cluster"],
                target=r["target"],
                detail=json.loads(r["detail"]),
                outcome=r["outcome"],
            )
            for r in reversed(rows)
        ]


def open_state(path: str | Path, *, clock: Clock | None = None) -> tuple[SqlitePendingStore, SqliteAuditLog]:
    """The store and the audit log on one SQLite file (``settings.state_path``), on one clock."""
    db = SqliteDatabase(path)
    return SqlitePendingStore(db, clock=clock), SqliteAuditLog(db, clock=clock)
