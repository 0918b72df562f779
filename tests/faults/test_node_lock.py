"""2. Two actions on one node: kubelet.restart and checkpoint.clear clicked together.

Before: nothing held the node, and the observed order was stop (clear), restart (restart), mv,
start: the checkpoint was moved under a running kubelet. Now one action per node runs at a time,
across processes sharing the state file; the second click is refused by name and its offer stays
clickable. Backup names carry the time in nanoseconds and the action id, so two runs never collide.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.probes.clients import KubeClients
from bot.remediation import RemediationService
from tests.faults.conftest import NODE, Rig, end_state, offer

STOP, START, RESTART = "systemctl stop kubelet", "systemctl start kubelet", "systemctl restart kubelet"


def interleaved(history: list[str]) -> bool:
    """A restart between the clear's stop and its start: the bug this lock prevents."""
    if STOP not in history:
        return False
    window = history[history.index(STOP): history.index(START) if START in history else len(history)]
    return RESTART in window


async def test_two_actions_clicked_together_on_one_node_run_one_at_a_time(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600  # each run waits for Ready until we let it
        restart, clear = await offer(rem, "kubelet.restart"), await offer(rem, "checkpoint.clear")
        clicks = [asyncio.create_task(rem.click(restart, "U0BOB")), asyncio.create_task(rem.click(clear, "U0BOB"))]
        done, _ = await asyncio.wait(clicks, return_when=asyncio.FIRST_COMPLETED)  # the refused one
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 0.0
        sim.api.lifecycle.heartbeat(NODE)  # the winner's kubelet posts: it finishes
        first, second = [await c for c in clicks]
        outcomes = {first.status, second.status}
        assert outcomes == {"succeeded", "busy"}, (first.message, second.message)
        busy = first if first.status == "busy" else second
        winner = "kubelet.restart" if busy is second else "checkpoint.clear"
        assert f"another action is running on {NODE} ({winner}, started by U0BOB)" in busy.message
        assert not interleaved(sim.ssh.history(NODE))
        # the refused offer stays clickable and runs once the node is free
        assert busy.action is not None and rem.flow.store.get(busy.action.id).state == "pending"  # type: ignore[union-attr]
        again = await rem.click(busy.action.id, "U0BOB")
        assert again.status == "succeeded", again.message
        assert not interleaved(sim.ssh.history(NODE))
        assert end_state(sim) == ("active", False)
        refusals = [e for e in rem.flow.audit.query(action_id=busy.action.id) if e.event == "refuse"]
        assert refusals and "another action is running on" in refusals[0].detail["reason"]


async def test_the_lock_holds_across_two_processes_on_one_state_file(rig: Rig) -> None:
    async with rig() as (sim, rem):
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600  # the restart waits for Ready until we let it
        other_clients = KubeClients(rem.settings)
        other = RemediationService(rem.settings, other_clients)  # a second replica, same file
        try:
            restart = await offer(rem, "kubelet.restart")
            clear = await offer(other, "checkpoint.clear")
            running = asyncio.create_task(rem.click(restart, "U0BOB"))
            await wait_for(lambda: sim.ssh.history(NODE) == [RESTART])
            refused = await other.click(clear, "U0BOB")
            assert refused.status == "busy"
            assert f"another action is running on {NODE} (kubelet.restart, started by U0BOB)" in refused.message
            sim.api.lifecycle.heartbeat(NODE)
            assert (await running).status == "succeeded"
            assert sim.ssh.history(NODE) == [RESTART]  # the clear never touched the node meanwhile
        finally:
            await other_clients.close()


async def test_two_clears_never_share_a_backup_name(rig: Rig) -> None:
    async with rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        assert (await rem.click(await offer(rem, "checkpoint.clear"), "U0BOB")).status == "succeeded"
        sim.ssh.state(NODE).checkpoint = original  # the zombies come back
        assert (await rem.click(await offer(rem, "checkpoint.clear"), "U0BOB")).status == "succeeded"
        backups = sim.ssh.backups(NODE)
        assert len(backups) == 2 and list(backups.values()) == [original, original]


async def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)
