"""The audit trail on the state file: INSERT and SELECT only.

The table is append-only by construction (triggers in ``sqlite`` abort any UPDATE or DELETE);
this module must never run either.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from bot.state.audit_log import AppendOnlyLog
from bot.state.records import AuditEntry, utc
from bot.state.sqlite import Clock, FileClock, SqliteDatabase, translated
from bot.state.timestamps import format_ts, parse_ts


class SqliteAuditLog(FileClock, AppendOnlyLog):
    """``AuditLog`` on SQLite: INSERT and SELECT only."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock

    @translated
    def write(self, entry: AuditEntry) -> AuditEntry:
        e = entry
        detail_json = json.dumps(dict(e.detail), sort_keys=True, default=str, ensure_ascii=False)
        cur = self.db.connection().execute(
            "INSERT INTO audit (ts, event, action_id, action, actor, cluster, target, detail, outcome) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (format_ts(e.ts), e.event, e.action_id, e.action, e.actor, e.cluster, e.target, detail_json, e.outcome),
        )
        return replace(e, id=int(cur.lastrowid or 0))

    @translated
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
