"""The SQLite file under the embedded state (``state: sqlite``): the one connection setup, the
one migration list, errors.

Every SQLite store (``sqlite_actions``, ``sqlite_audit``, ``sqlite_requests``, ``sqlite_watch``)
works on one ``SqliteDatabase``, so there is one PRAGMA policy for the whole file:

- WAL journal, one connection per thread, ``busy_timeout`` 15 s: readers never block the writer,
  and a second process (another terminal, ``gpubot audit``) waits instead of failing;
- every state change runs inside ``BEGIN IMMEDIATE``, which takes SQLite's single write lock, so a
  read-then-write (a claim) is one atomic step across threads and processes;
- ``synchronous = FULL`` on every connection: an approval, a claim or a result that was reported
  to a person must survive a power cut, and the file holds the action records. ``NORMAL`` would
  save an fsync per Slack request or watch row, but a second policy on the same file is a second
  thing to reason about when the one that matters (the action records) is the durable one.

Times are stored with ``bot.state.timestamps`` (fixed-width UTC text, so text comparison is time
comparison). The state's clock is this host's (the clock of whoever holds the file), never a time
a caller passes in. Every SQLite error leaves the store modules as ``StateStoreError`` with a
one-line reason ("database or disk is full"). ``MIGRATIONS`` is the schema's whole history: a
file of any earlier version is brought up to date when it is opened.

This module must never hand a connection out beyond the store modules.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import ParamSpec, TypeVar

from bot.errors import ConfigError, StateStoreError
from bot.settings.state_path import ensure_state_dir
from bot.state.records import STATES, utc
from bot.state.timestamps import now_utc

#: replaces this host's clock (tests)
Clock = Callable[[], datetime]
_P = ParamSpec("_P")
_T = TypeVar("_T")
_STATE_LIST = ", ".join(f"'{s}'" for s in sorted(STATES))
#: version 0 -> 1: pending actions and the append-only audit trail
_SCHEMA_V1 = (
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

#: version 2 -> 3: the blocks of the message a run's status line is in, so whichever process
#: ends the run (a survivor restoring it) can edit that line in place
_SCHEMA_V3 = ("ALTER TABLE pending_actions ADD COLUMN message_blocks TEXT",)

#: version 3 -> 4: the watch's memory, which earlier versions created on first use outside the
#: versioned schema (hence ``IF NOT EXISTS``: a file of version 3 may already hold these tables)
_SCHEMA_V4 = (
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
    # the message of each Alertmanager group per channel (``bot.proactive.alerts``)
    """CREATE TABLE IF NOT EXISTS watch_alert_groups (
        group_key TEXT NOT NULL,
        channel TEXT NOT NULL,
        message_ts TEXT NOT NULL,
        digest TEXT NOT NULL,
        PRIMARY KEY (group_key, channel)
    )""",
)

#: the schema's history: ``MIGRATIONS[n]`` takes a file from version n to n + 1 (``PRAGMA user_version``)
MIGRATIONS: tuple[tuple[str, ...], ...] = (_SCHEMA_V1, _SCHEMA_V2, _SCHEMA_V3, _SCHEMA_V4)
SCHEMA_VERSION = len(MIGRATIONS)


class FileClock:
    """The clock of a store on the file: this host's (whoever holds the file), never a caller's;
    ``clock`` replaces it (tests)."""

    clock: Clock | None = None

    def now(self) -> datetime:
        return utc(self.clock()) if self.clock is not None else now_utc()


class SqliteDatabase:
    """One SQLite file, one connection per thread, the schema migrated on open."""

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
            ensure_state_dir(self.path)
            with self.transaction() as conn:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise ConfigError(
                        f"state file {self.path}: schema version {version} is newer than this gpubot"
                    )
                for migration in MIGRATIONS[version:]:
                    for statement in migration:
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
        """Close this thread's connection and let go of the others. Closing a connection that
        another thread is running a statement on crashes the interpreter (CPython's sqlite3 does not
        guard against it: a segfault in `gpubot serve`'s shutdown while a sweep listed offers in a
        worker thread); without our references each one is closed by its thread's last use."""
        with self._lock:
            self._connections = []
        mine: sqlite3.Connection | None = getattr(self._local, "conn", None)
        self._local = threading.local()
        if mine is not None:
            mine.close()


def store_error(exc: sqlite3.Error) -> StateStoreError:
    """Our one-line error for an SQLite failure (``database or disk is full``, ``readonly``…)."""
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return StateStoreError(f"the state file cannot be written or read ({text})")


def translated(fn: Callable[_P, _T]) -> Callable[_P, _T]:
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


