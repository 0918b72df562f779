"""The embedded default store: pending actions and the audit trail in one SQLite file (WAL).

Safe from many threads (one connection per thread) and from several processes on the same file
(two replicas on a shared volume): every state change runs inside ``BEGIN IMMEDIATE``, which
takes SQLite's single write lock, and the pending → running guard is the ``UPDATE … WHERE
state='pending' AND expires_at > now`` itself, checked by its row count. Times are stored as
fixed-width UTC text, so text comparison is time comparison.

The audit table is append-only by construction: triggers abort any UPDATE or DELETE on it.
This module must never run an UPDATE or DELETE on ``audit``, and never hand a connection out.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.errors import ConfigError
from bot.remediation.audit import AUDIT_EVENTS, AuditEntry, format_ts, parse_ts
from bot.remediation.store import FINISH_STATES, STATES, ClaimResult, ClaimStatus, PendingAction, utc

SCHEMA_VERSION = 1
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
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


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
        finished_at=parse_ts(row["finished_at"]) if row["finished_at"] else None,
        result_summary=row["result_summary"],
        finding_code=row["finding_code"],
    )


class SqlitePendingStore:
    """``PendingStore`` on SQLite."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

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

    def get(self, action_id: str) -> PendingAction | None:
        row = (
            self.db.connection()
            .execute("SELECT * FROM pending_actions WHERE id = ?", (action_id,))
            .fetchone()
        )
        return _row_to_action(row) if row is not None else None

    def claim(self, action_id: str, *, approver: str, now: datetime) -> ClaimResult:
        stamp = format_ts(utc(now))
        status: ClaimStatus
        with self.db.transaction() as c:
            row = c.execute("SELECT state FROM pending_actions WHERE id = ?", (action_id,)).fetchone()
            if row is None:
                return ClaimResult("unknown")
            taken = c.execute(
                "UPDATE pending_actions SET state = 'running', approved_by = ? "
                "WHERE id = ? AND state = 'pending' AND expires_at > ?",
                (approver, action_id, stamp),
            ).rowcount
            if taken == 1:
                status = "claimed"
            elif row["state"] == "pending":
                c.execute(
                    "UPDATE pending_actions SET state = 'expired', finished_at = ?, "
                    "result_summary = 'expired before anyone approved it' WHERE id = ? AND state = 'pending'",
                    (stamp, action_id),
                )
                status = "expired"
            else:
                status = "already_taken"
            current = c.execute("SELECT * FROM pending_actions WHERE id = ?", (action_id,)).fetchone()
        action = _row_to_action(current)
        return ClaimResult(status, action, action.state)

    def finish(
        self, action_id: str, state: str, summary: str, *, now: datetime | None = None
    ) -> PendingAction | None:
        if state not in FINISH_STATES:
            raise ValueError(f"finish: {state!r} is not one of {sorted(FINISH_STATES)}")
        with self.db.transaction() as c:
            done = c.execute(
                "UPDATE pending_actions SET state = ?, result_summary = ?, finished_at = ? "
                "WHERE id = ? AND state = 'running'",
                (state, summary, format_ts(utc(now or _now())), action_id),
            ).rowcount
            row = c.execute("SELECT * FROM pending_actions WHERE id = ?", (action_id,)).fetchone()
        return _row_to_action(row) if done == 1 else None

    def set_message(
        self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None
    ) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE pending_actions SET channel = ?, message_ts = ?, thread_ts = ? WHERE id = ?",
                (channel, message_ts, thread_ts, action_id),
            )

    def _move_all(
        self,
        from_state: str,
        to_state: str,
        summary: str,
        extra_where: str,
        args: tuple[Any, ...],
        now: datetime,
    ) -> builtins.list[PendingAction]:
        stamp = format_ts(utc(now))
        with self.db.transaction() as c:
            ids = [
                r["id"]
                for r in c.execute(
                    f"SELECT id FROM pending_actions WHERE state = ? {extra_where}",  # noqa: S608 (constant)
                    (from_state, *args),
                )
            ]
            for action_id in ids:
                c.execute(
                    "UPDATE pending_actions SET state = ?, finished_at = ?, result_summary = ? "
                    "WHERE id = ? AND state = ?",
                    (to_state, stamp, summary, action_id, from_state),
                )
            rows = [c.execute("SELECT * FROM pending_actions WHERE id = ?", (i,)).fetchone() for i in ids]
        return [_row_to_action(r) for r in rows]

    def expire_overdue(self, now: datetime) -> builtins.list[PendingAction]:
        return self._move_all(
            "pending",
            "expired",
            "expired before anyone approved it",
            "AND expires_at <= ?",
            (format_ts(utc(now)),),
            now,
        )

    def mark_interrupted_on_start(self, *, now: datetime | None = None) -> builtins.list[PendingAction]:
        return self._move_all(
            "running", "interrupted", "interrupted by a restart of the bot; not re-run", "", (), now or _now()
        )

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


class SqliteAuditLog:
    """``AuditLog`` on SQLite: INSERT and SELECT only."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

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
        when = utc(ts or _now())
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


def open_state(path: str | Path) -> tuple[SqlitePendingStore, SqliteAuditLog]:
    """The store and the audit log on one SQLite file (``settings.state_path``)."""
    db = SqliteDatabase(path)
    return SqlitePendingStore(db), SqliteAuditLog(db)
