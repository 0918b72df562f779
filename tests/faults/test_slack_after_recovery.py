"""Issue 29, point 7: Slack as people see it after a run was cut off, and while gpubot acts.

Before: when the replica running a node action died and the survivor restored the node, the
report's status line still said "running…" (only a thread warning was posted): the edit needed
the message's blocks, which only the dead process held in memory. Now the process that announces
a run keeps those blocks in the shared state, and the survivor edits the line from them. And the
watch posted "node not Ready" about a node gpubot itself was restarting: now a sweep does not
report a node whose gpubot action Lease is held, and says so in its log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from bot.slack.offer_messages import status_block_id
from tests.actions.conftest import APPROVER, REQUESTER, ZOMBIE_NODE, scenario
from tests.actions.slack_rig import WHY_PENDING, button_text, buttons
from tests.faults.cli_rig import lease_run_out
from tests.faults.conftest import end_state
from tests.proactive.rig import posts, started, stopped, watch_settings
from tests.replicas.rig import Replica, ReplicaRig, replica_rig
from tests.slack.helpers import form, post, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

NODE = ZOMBIE_NODE
STOP = "systemctl stop kubelet"


def status_line(mock: MockSlackApi, channel: str, ts: str, offer_id: str) -> str:
    for block in mock.message(channel, ts)["blocks"]:
        if block.get("block_id") == status_block_id(offer_id):
            return " ".join(str(e.get("text")) for e in block.get("elements") or [])
    return ""


async def a_report(rig: ReplicaRig, replica: Replica) -> tuple[str, str, str]:
    """Ask ``replica`` why the pod pends; the new report's (channel, ts, checkpoint.clear offer id)."""
    mock = rig.mock
    before = set(mock.messages)
    body = form(slash_payload(mock, WHY_PENDING))
    status, _, _ = await post(replica.url + "/slack/events", body, sign(body))
    assert status == 200

    def report() -> tuple[str, str, str] | None:
        for (channel, ts), msg in list(mock.messages.items()):
            found = buttons(msg.get("blocks") or []).get(button_text("checkpoint.clear", NODE))
            if found and (channel, ts) not in before:
                return channel, ts, found[0]
        return None

    found: tuple[str, str, str] = await mock.wait_for(report, timeout=90)
    return found


async def clicked_and_announced(rig: ReplicaRig, channel: str, ts: str, offer_id: str) -> str:
    """Click the offer (on the first live replica); once its kubelet is stopped and its status
    line says running, that line."""
    await rig.clicks(offer_id, 1)

    async def stopped_and_announced() -> bool:
        return rig.sim.ssh.history(NODE) == [STOP] and "running" in status_line(rig.mock, channel, ts, offer_id)

    await rig.wait_for(stopped_and_announced, timeout=60, every=0.02)
    return status_line(rig.mock, channel, ts, offer_id)


async def edited_from(mock: MockSlackApi, channel: str, ts: str, offer_id: str, shown: str) -> str:
    """The offer's status line once it is no longer ``shown``: it says the run was interrupted."""

    def edited() -> str:
        line = status_line(mock, channel, ts, offer_id)
        return line if line != shown else ""

    line: str = await mock.wait_for(edited, timeout=60)
    assert line.startswith(":warning:") and "was interrupted" in line and "was not re-run" in line, line
    assert "schedulable, kubelet active" in line, line
    # the rest of the report is still there
    assert any(b.get("type") == "section" for b in mock.message(channel, ts)["blocks"])
    return line


async def test_the_survivor_edits_the_status_line_of_the_run_it_restored(tmp_path: Path) -> None:
    async with replica_rig(tmp_path) as rig:
        sim = rig.sim
        sim.ssh.state(NODE).latency_ms = 400  # room to cut in
        channel, ts, offer_id = await a_report(rig, rig.replicas[0])
        running_line = await clicked_and_announced(rig, channel, ts, offer_id)
        record = await rig.io(rig.store.get, offer_id)
        assert record is not None and record.state == "running" and record.message_blocks
        runner = rig.replica_of(record.owner or "")
        assert runner is not None
        rig.kill(runner)

        async def ended() -> bool:
            current = await rig.io(rig.store.get, offer_id)
            return current is not None and current.state == "interrupted"

        await rig.wait_for(ended, timeout=60)
        assert end_state(sim) == ("active", False)
        await edited_from(rig.mock, channel, ts, offer_id, running_line)


async def test_a_replica_with_another_state_edits_the_status_line_of_a_run_it_found_on_the_lease(
    tmp_path: Path,
) -> None:
    """The run's record is only in the dead bot's own SQLite file: the survivor finds the run on
    the node's Lease alone, restores the node, and edits the report's status line from what the
    Lease carries (where the message is, and its blocks), not only a note in the thread."""
    async with replica_rig(tmp_path, state="sqlite") as rig:
        runner, survivor = rig.replicas
        rig.sim.ssh.state(NODE).latency_ms = 400  # room to cut in
        channel, ts, offer_id = await a_report(rig, runner)
        # the first live replica clicks: the runner, whose state has the offer
        running_line = await clicked_and_announced(rig, channel, ts, offer_id)
        rig.kill(runner)
        await edited_from(rig.mock, channel, ts, offer_id, running_line)
        assert end_state(rig.sim) == ("active", False)
        assert survivor.alive()


async def test_a_click_that_restores_a_dead_run_first_edits_that_runs_status_line_too(tmp_path: Path) -> None:
    """No sweep comes first (its interval is an hour): a click on another report's button for the
    same node finds the dead run's Lease run out, restores the node before acting, and the dead
    run's status line in its own report says so, edited from what its Lease carries."""
    async with replica_rig(tmp_path, state="sqlite", offer_sweep_interval_s=3600.0) as rig:
        sim, mock = rig.sim, rig.mock
        runner, survivor = rig.replicas
        sim.ssh.state(NODE).latency_ms = 400  # room to cut in
        # one report (and offer) in each replica's own state
        channel, ts, dead_offer = await a_report(rig, runner)
        other_channel, other_ts, other_offer = await a_report(rig, survivor)
        running_line = await clicked_and_announced(rig, channel, ts, dead_offer)  # on the runner
        rig.kill(runner)
        await lease_run_out(sim, [NODE])
        moved = bool(sim.ssh.backups(NODE))
        assert status_line(mock, channel, ts, dead_offer) == running_line, "a sweep ran: this is not the click's path"
        await rig.clicks(other_offer, 1)  # the survivor, the only live replica

        def finished() -> str:
            line = status_line(mock, other_channel, other_ts, other_offer)
            return line if "succeeded" in line or "failed" in line else ""

        other_line = await mock.wait_for(finished, timeout=90)
        if moved:
            # the dead run's `mv` was already on its way when it was killed (the simulated node
            # applies a command after its latency, whether or not the sender still lives): the
            # zombie entry is gone, and the second clear is refused on its precondition
            assert "precondition" in other_line and "succeeded" not in other_line, other_line
        else:
            assert "succeeded" in other_line, other_line
        await edited_from(mock, channel, ts, dead_offer, running_line)
        assert end_state(sim) == ("active", False)


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    mock = await MockSlackApi().start()
    try:
        yield mock
    finally:
        await mock.stop()


async def test_the_watch_does_not_report_a_node_gpubot_is_acting_on(
    tmp_path: Path, slack_api: MockSlackApi, caplog: pytest.LogCaptureFixture
) -> None:
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim", remediation=True) as sim:
        settings = watch_settings(
            slack_api, sim,
            extra={"approvers": {"*": (APPROVER,)}, "state_path": str(tmp_path / "state.db"),
                   "node_ready_timeout_s": 30.0},
        )
        bot = await started(settings)
        try:
            assert bot.remediation is not None and bot.watchers
            rem, watcher = bot.remediation.remediation, bot.watchers[0]
            offer = await rem.offer("kubelet.restart", {"node": NODE}, cluster="", requested_by=REQUESTER)
            assert offer is not None
            sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600  # the restart waits for Ready until we let it
            click = asyncio.create_task(rem.click(offer.id, APPROVER))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while "systemctl restart kubelet" not in sim.ssh.history(NODE):
                assert loop.time() < deadline and not click.done(), "the restart never started"
                await asyncio.sleep(0.01)

            with caplog.at_level(logging.INFO, logger="gpubot.watch"):
                during = await watcher.sweep()
            assert during.acting, "the sweep did not see the action's Lease"
            assert not [c for c in posts(slack_api) if NODE in str(c.body)], "it reported a node gpubot is restarting"
            skipped = [r for r in caplog.records if "gpubot is acting on it" in r.getMessage()]
            assert skipped and getattr(skipped[0], "node", "") == NODE, [r.getMessage() for r in caplog.records]

            sim.api.lifecycle.heartbeat_delay_s.pop(NODE, None)
            sim.api.lifecycle.heartbeat(NODE)
            outcome = await asyncio.wait_for(click, 60)
            assert outcome.status == "succeeded", outcome.message
            after = await watcher.sweep()  # the action is over: the node's own problem is reported again
            assert not after.acting and [c for c in posts(slack_api) if NODE in str(c.body)]
        finally:
            await stopped(bot)
