"""3. Cancellation mid-action, and shutdown while an action runs.

Before: only StepFailed and GpubotError were caught, so a cancelled run (shutdown, a handler cut
off) restored nothing, and shutdown waited 25 s while the Ready wait alone can take 120 s. Now a
cancelled run stops at its step, runs the restore to its end shielded from further cancellation,
and records the outcome before the cancellation goes on; ``serve`` waits for a running action up
to that action's own maximum.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.server import serve
from bot.sim.cluster import SimCluster
from bot.slack.transport import SlackServer
from tests.actions.conftest import APPROVER, scenario
from tests.actions.slack_rig import WHY_PENDING, button_text, buttons
from tests.faults.conftest import NODE, Rig, assert_truthful, checkpoint_kept, end_state, offer
from tests.slack.helpers import click_payload, form, interaction_form, post, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

STOP = "systemctl stop kubelet"
REPORT_TS = "1700000000.000002"


async def until(predicate: object, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_a_run_cancelled_while_the_kubelet_is_stopped_restores_the_node(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        sim.ssh.state(NODE).latency_ms = 300  # every command takes a while: room to cut in
        action_id = await offer(rem, "checkpoint.clear")
        click = asyncio.create_task(rem.click(action_id, "U0BOB"))
        await until(lambda: sim.ssh.history(NODE) == [STOP])  # kubelet stopped, the move on its way
        click.cancel()
        click.cancel()  # a second cancel (an impatient shutdown) must not cut the restore short
        with pytest.raises(asyncio.CancelledError):
            await click
        assert end_state(sim) == ("active", False)
        assert checkpoint_kept(sim, original)
        record = rem.flow.store.get(action_id)
        assert record is not None and record.state == "failed"
        assert "was cancelled at" in (record.result_summary or "")
        assert "schedulable, kubelet active, Ready=True" in (record.result_summary or "")
        trail = rem.flow.audit.query(action_id=action_id)
        assert trail[-1].event == "result" and trail[-1].outcome == "failed"
        assert_truthful(trail)
        assert any(e.outcome == "ok" and "restore: systemctl start kubelet" in str(e.detail.get("step")) for e in trail)


async def test_shutdown_waits_for_a_running_action_beyond_the_diagnosis_grace(
    tmp_path: Path, slack_api: MockSlackApi
) -> None:
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api, base=sim.settings(), approvers={"*": (APPROVER,)}, node_ready_timeout_s=30.0,
            state_path=str(tmp_path / "state.db"), shutdown_grace_s=0.1,
        )
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600  # the Ready wait lasts until we let it
        stop = asyncio.Event()
        started: asyncio.Future[SlackServer] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(settings, stop=stop, started=started, configure_logs=False))
        try:
            server = await asyncio.wait_for(asyncio.shield(started), 30)
            url = f"http://127.0.0.1:{server.port}/slack/events"
            body = form(slash_payload(slack_api, WHY_PENDING))
            assert (await post(url, body, sign(body)))[0] == 200
            await slack_api.wait_for(lambda: ("C0GPU", REPORT_TS) in slack_api.messages, timeout=60)
            await slack_api.wait_for(lambda: len(server.bot.tasks) == 0, timeout=60)
            value = buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])[button_text("checkpoint.clear", NODE)][0]
            click = interaction_form(click_payload(slack_api, value, user=APPROVER))
            assert (await post(url, click, sign(click)))[0] == 200
            await until(lambda: len(sim.ssh.history(NODE)) == 3)  # waiting for Ready now
            stop.set()  # SIGTERM while the action waits for Ready
            # the kubelet posts a second later: ten times the 0.1 s grace of the diagnoses
            asyncio.get_running_loop().call_later(1.0, sim.api.lifecycle.heartbeat, NODE)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
    # serve returned only after the action ended, and it ended well: nothing was cut off
    assert sim.ssh.history(NODE)[0] == STOP and end_state(sim) == ("active", False)
    texts = [c.body.get("text", "") for c in slack_api.of("chat.update")]
    assert any("succeeded" in t for t in texts)
    assert not any("cancelled" in t for t in texts)
