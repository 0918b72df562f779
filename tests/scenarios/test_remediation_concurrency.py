"""One button, many clicks; and a bot restart between the offer and the click.

50 signed clicks on one "checkpoint.clear" button at once run it exactly once. A bot restarted on
the same SQLite file (new RemediationService, Service and Slack app) still honours an offer made before
the restart; a run its process stopped renewing (it died) is restored from the state it wrote,
marked interrupted and reported, never re-run; a run another live replica renews is left alone.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from bot.sim.store import RESOURCE_TYPES
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, cluster_writes, scenario
from tests.actions.slack_rig import SlackRig, button_text, mock_slack_server, slack_rig, started
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


BUTTON = button_text("checkpoint.clear", ZOMBIE_NODE)


def age_heartbeat(state: Path, action_id: str, *, seconds: float) -> None:
    """Move a record's last heartbeat into the past: what a process that died that long ago leaves."""
    then = (datetime.now(UTC) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    conn = sqlite3.connect(state)
    conn.execute("UPDATE pending_actions SET heartbeat_at = ? WHERE id = ?", (then, action_id))
    conn.commit()
    conn.close()


def cordon_by_hand(sim: SimCluster) -> None:
    node = sim.api.store.find("Node", ZOMBIE_NODE)
    assert node is not None
    rtype = next(rt for rt in RESOURCE_TYPES if rt.kind == "Node")
    sim.api.store.put(rtype, {**node, "spec": {**node.get("spec", {}), "unschedulable": True}})


async def test_fifty_concurrent_clicks_execute_once(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        value = (await rig.command())[BUTTON][0]
        await rig.clicks(value, 50)
        history = rig.sim.ssh.history(ZOMBIE_NODE)
        assert len(history) == 3 and history[0] == "systemctl stop kubelet"
        assert len(cluster_writes(rig.sim)) == 2
        entries = rig.rem.flow.audit.query(action_id=value)
        assert [e.event for e in entries].count("start") == 1
        assert [e.event for e in entries].count("result") == 1
        assert sum(1 for e in entries if e.event == "refuse" and "already" in str(e.detail.get("reason"))) == 49
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]


async def test_offer_survives_a_restart_of_the_bot(tmp_path: Path, slack_api: MockSlackApi) -> None:
    state = tmp_path / "state.db"
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api,
            base=sim.settings(),
            approvers={"*": (APPROVER,)},
            node_ready_timeout_s=5.0,
            state_path=str(state),
        )
        async with started(settings, slack_api) as bot:
            first = SlackRig(sim, bot, slack_api, settings)
            value = (await first.command())[BUTTON][0]
        assert cluster_writes(sim) == []
        # a new process on the same state file
        async with started(settings, slack_api) as bot:
            second = SlackRig(sim, bot, slack_api, settings)
            await second.click(value)
            assert bot.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]
        assert len(sim.ssh.history(ZOMBIE_NODE)) == 3


async def test_a_run_cut_off_by_a_restart_is_restored_not_rerun(tmp_path: Path, slack_api: MockSlackApi) -> None:
    state = tmp_path / "state.db"
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api, base=sim.settings(), approvers={"*": (APPROVER,)}, state_path=str(state),
            node_ready_timeout_s=5.0,
        )
        async with started(settings, slack_api) as bot:
            first = SlackRig(sim, bot, slack_api, settings)
            value = (await first.command())[BUTTON][0]
            # as if the process died mid-run: it cordoned the node, recorded that the kubelet
            # stop was about to be sent, the stop happened, and nothing more
            store = bot.rem.flow.store
            assert store.claim(value, approver=APPROVER, owner=bot.rem.flow.owner).claimed
            store.set_message(value, channel="C0GPU", message_ts="1700000000.000002")
            progress = {"step": f"ssh {ZOMBIE_NODE}: systemctl stop kubelet", "we_cordoned": True, "kubelet_down": True}
            store.save_progress(value, bot.rem.flow.owner, progress)
        cordon_by_hand(sim)
        sim.ssh.execute(ZOMBIE_NODE, "systemctl stop kubelet")
        age_heartbeat(state, value, seconds=600)  # its process stopped renewing it long ago
        async with started(settings, slack_api) as bot:
            record = bot.rem.flow.store.get(value)
            assert record is not None and record.state == "interrupted"
            assert "restored" in (record.result_summary or "") and "schedulable, kubelet active" in (
                record.result_summary or ""
            )
            second = SlackRig(sim, bot, slack_api, settings)
            await second.click(value)
            trail = bot.rem.flow.audit.query(action_id=value)
            assert [e.event for e in trail].count("interrupted") == 1
            assert [e.event for e in trail][-1] == "refuse"  # the click after the restart ran nothing
            restore_steps = [e.detail["step"] for e in trail if e.event == "step" and e.outcome == "ok"]
            assert any("restore: systemctl start kubelet" in s for s in restore_steps)
        notes = [c.body for c in slack_api.of("chat.postMessage") if "interrupted" in c.body.get("text", "")]
        assert notes and notes[0]["channel"] == "C0GPU" and notes[0]["thread_ts"] == "1700000000.000002"
        assert "restored" in notes[0]["text"] and "not re-run" in notes[0]["text"]
        # the only changes after the "crash": the restore's start and uncordon; the action never re-ran
        assert sim.ssh.history(ZOMBIE_NODE) == ["systemctl stop kubelet", "systemctl start kubelet"]
        assert sim.ssh.state(ZOMBIE_NODE).kubelet == "active"
        assert sim.api.store.find("Node", ZOMBIE_NODE)["spec"]["unschedulable"] is False


async def test_a_restarting_replica_leaves_a_live_replicas_run_alone(tmp_path: Path, slack_api: MockSlackApi) -> None:
    state = tmp_path / "state.db"
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api, base=sim.settings(), approvers={"*": (APPROVER,)}, state_path=str(state),
            node_ready_timeout_s=30.0,
        )
        # the restarted kubelet posts its first heartbeat only when we let it: replica A waits for Ready
        sim.api.lifecycle.heartbeat_delay_s[ZOMBIE_NODE] = 3600
        async with started(settings, slack_api) as a:
            value = (await SlackRig(sim, a, slack_api, settings).command())[BUTTON][0]
            clicked = asyncio.create_task(SlackRig(sim, a, slack_api, settings).click(value))
            # stop, mv, start sent: A now waits for the kubelet's first heartbeat
            await slack_api.wait_for(lambda: len(sim.ssh.history(ZOMBIE_NODE)) == 3, timeout=30)
            # replica B starts on the same file while A's run is in flight
            async with started(settings, slack_api) as b:
                assert await b.rem.recover() == []
                assert b.rem.flow.store.get(value).state == "running"  # type: ignore[union-attr]
            sim.api.lifecycle.heartbeat(ZOMBIE_NODE)
            await clicked
            final = a.rem.flow.store.get(value)
            assert final is not None and final.state == "succeeded", final.result_summary
            assert not [e for e in a.rem.flow.audit.query(action_id=value) if e.event == "interrupted"]
