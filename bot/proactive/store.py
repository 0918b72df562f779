"""The watch's memory: open problems and the Slack message each one owns, in the state database.

Its own table (``watch_problems``) in the same SQLite file as pending actions and the audit trail
(``settings.state_path``), so a restart finds every open problem and its message again: nothing
is posted twice and nothing is forgotten. A new problem's row is written *before* its message is
posted, with an empty ``message_ts`` (the intent: ``OpenProblem.posting``), and the ts is filled in
after: a process stopped between the post and the record leaves the intent, and the next sweep
looks for the message in the channel before it posts again (``bot.proactive.watcher``).
One row per (fingerprint, channel); a resolved row is
kept (with when and how long) so the history can be read, and a problem that comes back later
opens a fresh row and a fresh message. This module never touches another module's tables.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot.errors import ConfigError
from bot.proactive.problems import Problem
from bot.state_path import ensure_state_dir

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS watch_problems (
        fingerprint TEXT NOT NULL,
        channel TEXT NOT NULL,
        cluster TEXT NOT NULL,
        code TEXT NOT NULL,
        subject TEXT NOT NULL,
        severity TEXT NOT NULL,
        title TEXT NOT NULL,
        evidence TEXT NOT NULL,
        digest TEXT NOT NULL,
        message_ts TEXT NOT NULL,
        opened_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        resolved_at TEXT,
        state TEXT NOT NULL CHECK (state IN ('open', 'resolved'))
    )""",
    # at most one open row per problem and channel: the "one message per open problem" rule
    """CREATE UNIQUE INDEX IF NOT EXISTS watch_problems_open
        ON watch_problems (fingerprint, channel) WHERE state = 'open'""",
    "CREATE INDEX IF NOT EXISTS watch_problems_by_channel ON watch_problems (cluster, channel, state)",
    # a snooze silences one problem in one channel: until a time, or (until NULL) until it resolves
    """CREATE TABLE IF NOT EXISTS watch_snoozes (
        fingerprint TEXT NOT NULL,
        channel TEXT NOT NULL,
        until TEXT,
        snoozed_by TEXT NOT NULL,
        snoozed_at TEXT NOT NULL,
        PRIMARY KEY (fingerprint, channel)
    )""",
    # the one rate-limit summary message per channel and hour, edited while problems wait
    """CREATE TABLE IF NOT EXISTS watch_summaries (
        channel TEXT PRIMARY KEY,
        message_ts TEXT NOT NULL,
        window_start TEXT NOT NULL,
        digest TEXT NOT NULL
    )""",
)


#: the ``message_ts`` of a problem whose post is decided but not yet confirmed by Slack
POSTING = ""


def _ts(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class OpenProblem:
    """A problem as the store remembers it, with the message that shows it."""

    problem: Problem
    channel: str
    message_ts: str
    opened_at: datetime
    updated_at: datetime
    digest: str
    resolved_at: datetime | None = None

    @property
    def posting(self) -> bool:
        """Its post was decided but its ts never recorded: the process may have stopped mid-post."""
        return not self.message_ts


class ProblemStore:
    """Open and resolved watch problems in the SQLite file at ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        try:
            ensure_state_dir(self.path)
            with self._connect() as db:
                for statement in _SCHEMA:
                    db.execute(statement)
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(f"state database {self.path}: cannot open ({exc})") from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # a connection per call: sweeps are rare, and no connection is shared across threads
        db = sqlite3.connect(self.path, timeout=15.0, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    def open_problems(self, cluster: str, channel: str) -> dict[str, OpenProblem]:
        """Fingerprint -> the open problem posted to ``channel`` for ``cluster``."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT * FROM watch_problems WHERE cluster = ? AND channel = ? AND state = 'open'",
                (cluster, channel),
            ).fetchall()
            names = [d[0] for d in db.execute("SELECT * FROM watch_problems LIMIT 0").description]
        return {r[0]: self._row(dict(zip(names, r, strict=True))) for r in rows}

    def history(self, fingerprint: str) -> list[OpenProblem]:
        """Every row of one problem, oldest first (tests, and a future ``/gpu watch`` view)."""
        with self._connect() as db:
            cur = db.execute("SELECT * FROM watch_problems WHERE fingerprint = ? ORDER BY opened_at", (fingerprint,))
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        return [self._row(dict(zip(names, r, strict=True))) for r in rows]

    def opened(self, problem: Problem, *, channel: str, message_ts: str, at: datetime) -> None:
        with self._connect() as db:
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
                    _ts(at),
                    _ts(at),
                ),
            )

    def intend(self, problem: Problem, *, channel: str, at: datetime) -> None:
        """Record the open problem before its message is posted (the ts follows in ``posted``)."""
        self.opened(problem, channel=channel, message_ts=POSTING, at=at)

    def posted(self, fingerprint: str, *, channel: str, message_ts: str) -> None:
        """The message an intent was posted as."""
        with self._connect() as db:
            db.execute(
                "UPDATE watch_problems SET message_ts = ? WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (message_ts, fingerprint, channel),
            )

    def changed(self, problem: Problem, *, channel: str, at: datetime) -> None:
        with self._connect() as db:
            db.execute(
                "UPDATE watch_problems SET severity = ?, title = ?, evidence = ?, digest = ?, updated_at = ?"
                " WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (
                    problem.severity,
                    problem.title,
                    json.dumps(list(problem.evidence)),
                    problem.digest,
                    _ts(at),
                    problem.fingerprint,
                    channel,
                ),
            )

    def resolved(self, fingerprint: str, *, channel: str, at: datetime) -> None:
        with self._connect() as db:
            db.execute(
                "UPDATE watch_problems SET state = 'resolved', resolved_at = ?, updated_at = ?"
                " WHERE fingerprint = ? AND channel = ? AND state = 'open'",
                (_ts(at), _ts(at), fingerprint, channel),
            )

    def snooze(self, fingerprint: str, *, channel: str, until: datetime | None, by: str, at: datetime) -> None:
        """Silence the problem in ``channel`` until ``until`` (``None``: until it resolves)."""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO watch_snoozes (fingerprint, channel, until, snoozed_by, snoozed_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (fingerprint, channel, _ts(until) if until is not None else None, by, _ts(at)),
            )

    def snoozed(self, fingerprint: str, *, channel: str, now: datetime) -> bool:
        with self._connect() as db:
            row = db.execute(
                "SELECT until FROM watch_snoozes WHERE fingerprint = ? AND channel = ?", (fingerprint, channel)
            ).fetchone()
        return row is not None and (row[0] is None or _parse(str(row[0])) > now)

    def end_snoozes_until_resolved(self, fingerprint: str, *, channel: str) -> None:
        with self._connect() as db:
            db.execute(
                "DELETE FROM watch_snoozes WHERE fingerprint = ? AND channel = ? AND until IS NULL",
                (fingerprint, channel),
            )

    def posts_since(self, channel: str, since: datetime) -> int:
        """How many problem messages were posted to ``channel`` since ``since`` (any cluster)."""
        with self._connect() as db:
            row = db.execute(
                "SELECT COUNT(*) FROM watch_problems WHERE channel = ? AND opened_at > ?", (channel, _ts(since))
            ).fetchone()
        return int(row[0])

    def summary(self, channel: str) -> tuple[str, datetime, str] | None:
        """The channel's rate-limit summary: (message ts, window start, digest of its content)."""
        with self._connect() as db:
            row = db.execute(
                "SELECT message_ts, window_start, digest FROM watch_summaries WHERE channel = ?", (channel,)
            ).fetchone()
        return (str(row[0]), _parse(str(row[1])), str(row[2])) if row else None

    def summarised(self, channel: str, *, message_ts: str, window_start: datetime, digest: str) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO watch_summaries (channel, message_ts, window_start, digest)"
                " VALUES (?, ?, ?, ?)",
                (channel, message_ts, _ts(window_start), digest),
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
            opened_at=_parse(str(row["opened_at"])),
            updated_at=_parse(str(row["updated_at"])),
            digest=str(row["digest"]),
            resolved_at=_parse(str(resolved)) if resolved else None,
        )
