"""A state file written by the previous version still opens, with everything in it.

``state_v3.sql`` is a file as gpubot wrote it before the stores moved to ``bot.state`` (schema
version 3, the watch's tables created outside the versioned schema). Opening it must migrate it in
place to the current version and every store must read what the old version wrote: the running
action with its progress, the audit trail, the seen request, the open problem, the snooze, the
summary and the alert group.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.state.opening import open_sqlite
from bot.state.sqlite import MIGRATIONS, SCHEMA_VERSION

DUMP = Path(__file__).with_name("state_v3.sql")
T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.executescript(DUMP.read_text(encoding="utf-8"))
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    return path


def test_a_version_3_file_opens_migrated_with_everything_the_old_version_wrote(old_file: Path) -> None:
    stores = open_sqlite(old_file, clock=lambda: T0 + timedelta(seconds=5))
    try:
        running = stores.store.get("B" * 32)
        assert running is not None and running.state == "running" and running.owner == "old:1:aa"
        assert running.progress == {"cordoned": True, "step": "cordon"}
        assert running.message_blocks == '[{"type": "section"}]' and running.lock_key == "prod/node/gpu-2"
        pending = stores.store.get("A" * 32)
        assert pending is not None and pending.state == "pending"
        assert pending.finding_code == "KUBELET_CHECKPOINT_ZOMBIE"
        assert [(e.event, e.detail) for e in stores.audit.query()] == [("offer", {"reason": "zombie"}), ("approve", {})]
        assert stores.seen.first("command:trigger_id:1") is False  # seen 5 s ago by the old version
        (row,) = stores.problems.open_problems("prod", "C0WATCH").values()
        assert row.message_ts == "1.1" and row.opened_at == T0 and row.problem.title == "GPU lost on node-1"
        assert stores.problems.snoozed("gpu-lost/node-2", channel="C0WATCH", now=T0 + timedelta(days=1))
        assert stores.problems.summary("C0WATCH") == ("9.1", T0, "abc")
        assert stores.alert_groups.known('{}:{alertname="XidError"}', "C0WATCH") == ("2.1", "d1")
        # and it keeps working: the old run's node stays locked, a new offer and audit entry are written
        assert stores.store.claim("A" * 32, approver="U0A").claimed
        stores.audit.append("approve", action_id="A" * 32, actor="U0A")
    finally:
        stores.close()
    conn = sqlite3.connect(old_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    finally:
        conn.close()


def test_an_empty_file_gets_every_table_of_every_version(tmp_path: Path) -> None:
    open_sqlite(tmp_path / "state.db").close()
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        columns = {r[1] for r in conn.execute("PRAGMA table_info(pending_actions)")}
    finally:
        conn.close()
    assert {"pending_actions", "audit", "seen_requests", "watch_problems", "watch_snoozes", "watch_summaries",
            "watch_alert_groups"} <= tables
    assert {"owner", "heartbeat_at", "progress", "lock_key", "message_blocks"} <= columns
