"""The watch's memory on the state file: open problems and the Slack message each one owns, and
the message of each Alertmanager group.

Its own tables (``watch_*``, created by ``bot.state.sqlite``'s migrations) in the same SQLite file
as pending actions and the audit trail (``settings.state_path``), so a restart finds every open
problem and its message again: nothing is posted twice and nothing is forgotten. A new problem's
row is written *before* its message is posted, with an empty ``message_ts`` (the intent:
``OpenProblem.posting``), and the ts is filled in after: a process stopped between the post and
the record leaves the intent, and the next sweep looks for the message in the channel before it
posts again (``bot.proactive.watcher``). One row per (fingerprint, channel); a resolved row is
kept (with when and how long) so the history can be read, and a problem that comes back later
opens a fresh row and a fresh message. This module never touches another module's tables.
"""

from __future__ import annotations

import json
from datetime import datetime

from bot.state.records import POSTING, OpenProblem, Problem
from bot.state.sqlite import SqliteDatabase
from bot.state.timestamps import format_ts, parse_ts


class SqliteProblemStore:
    """``ProblemStore`` on the state file: open and resolved watch problems, snoozes, summaries."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def open_problems(self, cluster: str, channel: str) -> dict[str, OpenProblem]:
        """Fingerprint -> the open problem posted to ``channel`` for ``cluster``."""
        with self.db.transaction() as db:
            rows = db.execute(
                "SELECT * FROM watch_problems WHERE cluster = ? AND channel = ? AND state = 'open'",
                (cluster, channel),
            ).fetchall()
            return {r["fingerprint"]: self._row(dict(r)) for r in rows}

    def history(self, fingerprint: str) -> list[OpenProblem]:
        """Every row of one problem, oldest first (tests, and a future ``/gpu watch`` view)."""
        with self.db.transaction() as db:
            rows = db.execute(
                "SELECT * FROM watch_problems WHERE fingerprint = ? ORDER BY opened_at", (fingerprint,)
            ).fetchall()
        return [self._row(dict(r)) for r in rows]

    def opened(self, problem: Problem, *, channel: str, message_ts: str, at: datetime) -> None:
        with self.db.transaction() as db:
            db.execute(
                "INSERT INTO watch_problems (fingerprint, channel, cluster, code, subject, severity, title,"
                " evidence, digest, message_ts, opened_at, updated_at, state)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open')",
                (
                    problem.fingerprint,
                    channel,
                    problem.cluster,
                    problem.code,
                    problem.subject,
                    problem.severity,
                    problem.title,
                    json.dumps(list(problem.evidence)),
                    problem.digest,
                    message_ts,
                    format_ts(at),
                    format_ts(at),
                ),
            )

    def intend(self, problem: Problem, *, channel: str, at: datetime) -> None:
        """Record the open problem before its message is posted (the ts follows in ``posted``)."""
        self.opened(problem, channel=channel, message_ts=POSTING, at=at)

    def posted(self, fingerprint: str, *, channel: str, message_ts: str) -> None:
        """The message an intent was posted as."""
        with self.db.transaction() as db:
            db.execute(
                "UPDATE watch_problems SET message_ts = ? WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (message_ts, fingerprint, channel),
            )

    def changed(self, problem: Problem, *, channel: str, at: datetime) -> None:
        with self.db.transaction() as db:
            db.execute(
                "UPDATE watch_problems SET severity = ?, title = ?, evidence = ?, digest = ?, updated_at = ?"
                " WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (
                    problem.severity,
                    problem.title,
                    json.dumps(list(problem.evidence)),
                    problem.digest,
                    format_ts(at),
                    problem.fingerprint,
                    channel,
                ),
            )

    def resolved(self, fingerprint: str, *, channel: str, at: datetime) -> None:
        with self.db.transaction() as db:
            db.execute(
                "UPDATE watch_problems SET state = 'resolved', resolved_at = ?, updated_at = ?"
                " WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (format_ts(at), format_ts(at), fingerprint, channel),
            )

    def snooze(self, fingerprint: str, *, channel: str, until: datetime | None, by: str, at: datetime) -> None:
        """Silence the problem in ``channel`` until ``until`` (``None``: until it resolves)."""
        with self.db.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO watch_snoozes (fingerprint, channel, until, snoozed_by, snoozed_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (fingerprint, channel, format_ts(until) if until is not None else None, by, format_ts(at)),
            )

    def snoozed(self, fingerprint: str, *, channel: str, now: datetime) -> bool:
        with self.db.transaction() as db:
            row = db.execute(
                "SELECT until FROM watch_snoozes WHERE fingerprint = ? AND channel = ?", (fingerprint, channel)
            ).fetchone()
        return row is not None and (row[0] is None or parse_ts(str(row[0])) > now)

    def end_snoozes_until_resolved(self, fingerprint: str, *, channel: str) -> None:
        with self.db.transaction() as db:
            db.execute(
                "DELETE FROM watch_snoozes WHERE fingerprint = ? AND channel = ? AND until IS NULL",
                (fingerprint, channel),
            )

    def posts_since(self, channel: str, since: datetime) -> int:
        """How many problem messages were posted to ``channel`` since ``since`` (any cluster)."""
        with self.db.transaction() as db:
            row = db.execute(
                "SELECT COUNT(*) FROM watch_problems WHERE channel = ? AND opened_at > ?", (channel, format_ts(since))
            ).fetchone()
        return int(row[0])

    def summary(self, channel: str) -> tuple[str, datetime, str] | None:
        """The channel's rate-limit summary: (message ts, window start, digest of its content)."""
        with self.db.transaction() as db:
            row = db.execute(
                "SELECT message_ts, window_start, digest FROM watch_summaries WHERE channel = ?", (channel,)
            ).fetchone()
        return (str(row[0]), parse_ts(str(row[1])), str(row[2])) if row else None

    def summarised(self, channel: str, *, message_ts: str, window_start: datetime, digest: str) -> None:
        with self.db.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO watch_summaries (channel, message_ts, window_start, digest)"
                " VALUES (?, ?, ?, ?)",
                (channel, message_ts, format_ts(window_start), digest),
            )

    @staticmethod
    def _row(row: dict[str, object]) -> OpenProblem:
        problem = Problem(
            fingerprint=str(row["fingerprint"]),
            cluster=str(row["cluster"]),
            code=str(row["code"]),
            severity=str(row["severity"]),
            subject=str(row["subject"]),
            title=str(row["title"]),
            evidence=tuple(json.loads(str(row["evidence"]))),
        )
        resolved = row.get("resolved_at")
        return OpenProblem(
            problem=problem,
            channel=str(row["channel"]),
            message_ts=str(row["message_ts"]),
            opened_at=parse_ts(str(row["opened_at"])),
            updated_at=parse_ts(str(row["updated_at"])),
            digest=str(row["digest"]),
            resolved_at=parse_ts(str(resolved)) if resolved else None,
        )


class SqliteAlertGroups:
    """``AlertGroups`` on the state file's ``watch_alert_groups`` table (one replica)."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def known(self, group_key: str, channel: str) -> tuple[str, str] | None:
        with self.db.transaction() as db:
            row = db.execute(
                "SELECT message_ts, digest FROM watch_alert_groups WHERE group_key = ? AND channel = ?",
                (group_key, channel),
            ).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def remember(self, group_key: str, channel: str, message_ts: str, digest: str) -> None:
        with self.db.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO watch_alert_groups (group_key, channel, message_ts, digest)"
                " VALUES (?, ?, ?, ?)",
                (group_key, channel, message_ts, digest),
            )
