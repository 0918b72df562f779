"""Slack requests already handled, in the state file every replica shares (retry de-duplication).

This module only remembers keys; ``bot.slack.dedupe`` decides what a duplicate means.
"""

from __future__ import annotations

from datetime import timedelta

from bot.state.sqlite import Clock, FileClock, SqliteDatabase, translated
from bot.state.timestamps import format_ts


class SqliteSeenRequests(FileClock):
    """``SeenRequests`` on the state file, shared by every process on it (retry de-duplication).

    ``first(key)`` inserts the key and says whether it was new; keys older than ``ttl_s`` are
    forgotten. It writes through the file's one connection policy (``bot.state.sqlite``).
    """

    def __init__(self, db: SqliteDatabase, *, ttl_s: float = 600.0, clock: Clock | None = None) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self.clock = clock

    @translated
    def first(self, key: str) -> bool:
        now = self.now()
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM seen_requests WHERE seen_at < ?", (format_ts(now - timedelta(seconds=self.ttl_s)),)
            )
            new = conn.execute(
                "INSERT OR IGNORE INTO seen_requests (key, seen_at) VALUES (?, ?)", (key[:512], format_ts(now))
            ).rowcount
        return bool(new == 1)

    def close(self) -> None:
        """Release this thread's and every other thread's connection to the file."""
        self.db.close()
