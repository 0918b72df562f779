"""The embedded default store of pending actions, on the state file (``sqlite``).

Safe from many threads and from several processes on the same file (two replicas on a shared
volume): the claim's checks (pending, not expired by the store's clock, its node free) and its
``UPDATE`` run in one ``BEGIN IMMEDIATE`` transaction, and a partial unique index makes "one
running action per node" a fact of the file, not only of the code. ``open_sqlite``
(``bot.state.opening``) gives it with the audit trail (``sqlite_audit``) and the other stores on
one file and one clock.

This module must never touch the ``audit`` table, and never hand a connection out.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from bot.errors import StateStoreError
from bot.state.records import FINISH_STATES, STATES, ClaimResult, PendingAction
from bot.state.sqlite import Clock, FileClock, SqliteDatabase, translated
from bot.state.timestamps import format_ts, parse_ts


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
        message_blocks=row["message_blocks"] or "",
    )


class SqlitePendingStore(FileClock):
    """``PendingStore`` on SQLite, on the file's clock (``FileClock``)."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock

    @translated
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

    @translated
    def get(self, action_id: str) -> PendingAction | None:
        row = self._row(self.db.connection(), action_id)
        return _row_to_action(row) if row is not None else None

    @staticmethod
    def _row(c: sqlite3.Connection, action_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = c.execute(
            "SELECT * FROM pending_actions WHERE id = ?", (action_id,)
        ).fetchone()
        return row

    @translated
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

    @translated
    def heartbeat(self, action_id: str, owner: str) -> bool:
        with self.db.transaction() as c:
            done = c.execute(
                "UPDATE pending_actions SET heartbeat_at = ? WHERE id = ? AND owner = ? AND state = 'running'",
                (format_ts(self.now()), action_id, owner),
            ).rowcount
        return bool(done == 1)

    @translated
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

    @translated
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

    @translated
    def set_message(
        self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None
    ) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE pending_actions SET channel = ?, message_ts = ?, thread_ts = ? WHERE id = ?",
                (channel, message_ts, thread_ts, action_id),
            )

    @translated
    def set_blocks(self, action_id: str, blocks: str) -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE pending_actions SET message_blocks = ? WHERE id = ?", (blocks, action_id))

    @translated
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

    @translated
    def take_over_stale(
        self, owner: str, *, lease_s: float, skip: Collection[str] = ()
    ) -> builtins.list[PendingAction]:
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
                if r["id"] not in skip
            ]
            for action_id in ids:
                c.execute(
                    "UPDATE pending_actions SET owner = ?, heartbeat_at = ? WHERE id = ? AND state = 'running'",
                    (owner, format_ts(now), action_id),
                )
            rows = [self._row(c, i) for i in ids]
        return [_row_to_action(r) for r in rows if r is not None]

    @translated
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

