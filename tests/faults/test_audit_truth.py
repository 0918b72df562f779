"""5. A truthful audit trail.

Before: every step row said 'ok' (failed steps included); a full disk after the claim left the
record 'running' and the user "internal error (OperationalError)"; a replica whose clock was 20
minutes slow still ran an expired offer; ``USER=alice`` decided who the CLI actor was. Now the
record of a step comes before the step and the step does not run without it; outcomes are the
real ones; an unwritable state file stops the action (the node is restored) and the record is
completed truthfully once the file is writable again; expiry is the store's decision by its own
clock; the CLI actor is the OS account.
"""

from __future__ import annotations

import io
import json
import os
import pwd
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.state.records import ClaimResult
from bot.state.sqlite_actions import SqlitePendingStore
from tests.actions.conftest import cluster_writes, scenario, step
from tests.faults.conftest import NODE, Rig, assert_truthful, checkpoint_kept, end_state, offer

FULL = "database or disk is full"


def fill_disk(db: str) -> None:
    """From now on the file takes no writes: what SQLite answers when the disk is full."""
    conn = sqlite3.connect(db)
    for table, verb in (("audit", "INSERT"), ("pending_actions", "UPDATE")):
        conn.execute(
            f"CREATE TRIGGER full_{table} BEFORE {verb} ON {table} BEGIN SELECT RAISE(ABORT, '{FULL}'); END"
        )
    conn.commit()
    conn.close()


def free_disk(db: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER full_audit")
    conn.execute("DROP TRIGGER full_pending_actions")
    conn.commit()
    conn.close()


class DiskFillsUp:
    """The state store, whose disk fills up at a chosen moment of a run."""

    def __init__(self, inner: SqlitePendingStore, *, after_claim: bool = False, before_progress: int = 0) -> None:
        self.inner = inner
        self.after_claim = after_claim
        self.before_progress = before_progress
        self.progress_writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(self, action_id: str, **kwargs: Any) -> ClaimResult:
        result = self.inner.claim(action_id, **kwargs)
        if result.claimed and self.after_claim:
            fill_disk(self.inner.db.path)
        return result

    def save_progress(self, action_id: str, owner: str, progress: Any) -> None:
        self.progress_writes += 1
        if self.progress_writes == self.before_progress:
            fill_disk(self.inner.db.path)
        self.inner.save_progress(action_id, owner, progress)


async def test_a_full_disk_right_after_the_claim_runs_nothing_and_says_so(rig: Rig) -> None:
    async with rig() as (sim, rem):
        real = rem.flow.store
        rem.flow.store = DiskFillsUp(real, after_claim=True)  # type: ignore[assignment]
        action_id = await offer(rem, "checkpoint.clear")
        out = await rem.click(action_id, "U0BOB")
        assert out.status == "not_run"
        assert out.message == (
            f"checkpoint.clear on node/{NODE} was not run: the state file cannot be written or read "
            f"({FULL}). Nothing was changed."
        )
        assert "internal error" not in out.message
        assert sim.ssh.history(NODE) == [] and cluster_writes(sim) == []
        assert real.get(action_id).state == "running"  # type: ignore[union-attr]  # nothing could be written

        free_disk(real.db.path)
        rem.flow.store = real
        [recovered] = await rem.recover()  # what the next sweep does once the disk has room again
        assert recovered.state == "interrupted"
        assert "before its first step" in (recovered.result_summary or "")
        assert "nothing was changed" in (recovered.result_summary or "")
        events = [(e.event, e.outcome) for e in rem.flow.audit.query(action_id=action_id)]
        assert events == [("offer", "offered"), ("interrupted", "interrupted")]  # no approve/start/ok it never had


async def test_a_full_disk_mid_run_stops_before_the_next_step_and_restores(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        real = rem.flow.store
        rem.flow.store = DiskFillsUp(real, before_progress=2)  # type: ignore[assignment]  # after the cordon
        action_id = await offer(rem, "checkpoint.clear")
        out = await rem.click(action_id, "U0BOB")
        assert out.status == "failed"
        assert f"stopped at '{step(rem, NODE, 'systemctl stop kubelet')}': not run: " in out.message
        assert FULL in out.message and "could not be written to the state file" in out.message
        assert sim.ssh.history(NODE) == []  # the stop never went out
        assert end_state(sim) == ("active", False)  # the cordon was undone
        assert sim.ssh.state(NODE).checkpoint == original and checkpoint_kept(sim, original)

        free_disk(real.db.path)
        rem.flow.store = real
        [recovered] = await rem.recover()
        summary = recovered.result_summary or ""
        assert recovered.state == "interrupted"
        assert f"after it started '{step(rem, NODE, 'systemctl stop kubelet')}'" in summary or "cordon" in summary
        assert "schedulable, kubelet active" in summary
        trail = rem.flow.audit.query(action_id=action_id)
        assert_truthful(trail)
        assert ("step", "starting") in [(e.event, e.outcome) for e in trail]  # the cordon, recorded first
        assert not [e for e in trail if e.event == "result" and e.outcome == "ok"]


async def test_an_expired_offer_clicked_from_a_process_with_a_slow_clock_does_not_run(rig: Rig) -> None:
    async with rig() as (sim, rem):
        # offered 16 minutes ago (15 minute lifetime) by a replica with a correct clock
        real_clock = rem.flow.store.clock
        rem.flow.store.clock = lambda: datetime.now(UTC) - timedelta(minutes=16)  # type: ignore[attr-defined]
        action_id = await offer(rem, "kubelet.restart")
        rem.flow.store.clock = real_clock  # type: ignore[attr-defined]
        # the clicking process believes it is 20 minutes earlier than it is
        slow = lambda: datetime.now(UTC) - timedelta(minutes=20)  # noqa: E731
        rem.flow.clock = slow
        out = await rem.click(action_id, "U0BOB")
        assert out.status == "expired"
        assert sim.ssh.history(NODE) == [] and cluster_writes(sim) == []
        assert rem.flow.store.get(action_id).state == "expired"  # type: ignore[union-attr]
        assert rem.flow.audit.query(action_id=action_id)[-1].event == "expire"


def test_user_in_the_environment_does_not_choose_the_cli_actor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUBOT_STATE_PATH", str(tmp_path / "state.db"))
    monkeypatch.setenv("GPUBOT_NODE_READY_TIMEOUT_S", "5")
    for var in ("USER", "LOGNAME", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "alice")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code = main(["act", "node.cordon", "--node", NODE, "--yes", "--scenario", str(scenario("zombie-checkpoint"))])
    assert code == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["audit", "--json"]) == 0
    actors = {json.loads(line)["actor"] for line in capsys.readouterr().out.splitlines() if line.strip()}
    me = "cli:" + pwd.getpwuid(os.getuid()).pw_name
    assert actors == {me, "gpubot"}
    assert "cli:alice" not in actors or me == "cli:alice"
