"""Slack requests already handled, in the state file every replica shares (retry de-duplication).

This module only remembers keys; ``bot.slack.dedupe`` decides what a duplicate means.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import suppress
from datetime import timedelta
from pathlib import Path

from bot.remediation.audit import format_ts
from bot.remediation.sqlite_db import Clock, SqliteDatabase, now_utc, translated


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

    @translated
    def first(self, key: str) -> bool:
        now = self.clock() if self.clock is not None else now_utc()
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
