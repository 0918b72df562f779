"""1. A node that drops the SSH connection (or, through its actuator, the exec stream) around the kubelet steps.

Before: a channel lost right after ``systemctl stop kubelet`` came back as exit -1, the dead
connection was kept, the kubelet counted as down only after the stop succeeded and a restore
that read "unknown" did not start it: the node stayed cordoned with its kubelet stopped although
it was reachable. Now the loss is an error, the shell reconnects once, a repeatable command is
asked again and anything else goes through the restore, which starts the kubelet. The same fault
cuts an exec stream into the node's gpubot-actuator pod after the command took effect, and the
actions behave identically over it (``node_rig`` runs each test over both transports).
"""

from __future__ import annotations

import pytest

from bot.errors import NodeProbeError
from bot.probes.ssh import KUBELET_ACTIVE, READ_COMMANDS, SshTarget, open_connection, run_command
from tests.actions.conftest import arrived_via, step, via
from tests.faults.conftest import NODE, Rig, assert_truthful, checkpoint_kept, end_state, offer, steps_of

STOP = "systemctl stop kubelet"
START = "systemctl start kubelet"
RESTART = "systemctl restart kubelet"


async def test_a_lost_channel_is_an_error_not_an_exit_status(rig: Rig) -> None:
    async with rig() as (sim, _rem):
        host, port = sim.ssh.targets[NODE]
        target = SshTarget(NODE, host, port, sim.ssh.user, str(sim.ssh.client_key_path), str(sim.ssh.known_hosts_path))
        sim.ssh.drop_connection_after(NODE, KUBELET_ACTIVE)
        conn = await open_connection(target, timeout=5)
        try:
            with pytest.raises(NodeProbeError, match="connection"):
                await run_command(conn, KUBELET_ACTIVE, allowed=READ_COMMANDS, node=NODE, timeout=5)
        finally:
            conn.close()


async def test_drop_right_after_the_stop_still_ends_with_the_kubelet_running(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        sim.ssh.drop_connection_after(NODE, STOP)
        out = await rem.click(await offer(rem, "checkpoint.clear"), "U0BOB")
        # the stop is safe to repeat: asked again on a new connection, and the action completes
        assert out.status == "succeeded", out.message
        assert end_state(sim) == ("active", False)
        assert sim.ssh.history(NODE)[:2] == [STOP, STOP]
        assert checkpoint_kept(sim, original) and original in sim.ssh.backups(NODE).values()
        assert_truthful(rem.flow.audit.query())


async def test_drop_twice_after_the_stop_restores_over_a_fresh_connection(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        sim.ssh.drop_connection_after(NODE, STOP, times=2)
        action_id = await offer(rem, "checkpoint.clear")
        out = await rem.click(action_id, "U0BOB")
        assert out.status == "failed"
        assert f"stopped at '{step(rem, NODE, STOP)}'" in out.message
        assert "outcome is unknown" in out.message
        # the kubelet counted as down before the stop was sent: the restore started it
        assert end_state(sim) == ("active", False)
        assert sim.ssh.history(NODE) == [STOP, STOP, START]
        assert arrived_via(sim) == {via(rem)}  # the drops and the restore, all over one transport
        assert sim.ssh.state(NODE).checkpoint == original  # never moved
        assert checkpoint_kept(sim, original)
        assert "schedulable, kubelet active, Ready=True" in out.message
        trail = rem.flow.audit.query(action_id=action_id)
        assert_truthful(trail)
        failed = [text for outcome, text in steps_of(trail) if outcome == "failed"]
        assert failed and failed[0].startswith(f"failed: {step(rem, NODE, STOP)} — ")
        assert trail[-1].event == "result" and trail[-1].outcome == "failed"


async def test_drop_after_a_restart_is_not_repeated_but_restored(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        sim.ssh.drop_connection_after(NODE, RESTART)
        out = await rem.click(await offer(rem, "kubelet.restart"), "U0BOB")
        assert out.status == "failed" and "outcome is unknown" in out.message
        assert sim.ssh.history(NODE).count(RESTART) == 1  # a restart is never sent twice blindly
        assert end_state(sim) == ("active", False)


async def test_drop_after_the_move_keeps_the_backup_and_says_where_it_may_be(node_rig: Rig) -> None:
    async with node_rig() as (sim, rem):
        original = sim.ssh.state(NODE).checkpoint or ""
        sim.ssh.drop_connection_after(NODE, "mv ", prefix=True)  # the name is new each run
        out = await rem.click(await offer(rem, "checkpoint.clear"), "U0BOB")
        assert out.status == "failed" and "outcome is unknown" in out.message
        assert end_state(sim) == ("active", False)
        (backup,) = sim.ssh.backups(NODE)
        assert sim.ssh.backups(NODE)[backup] == original  # moved whole, before the drop
        assert f"the checkpoint may have been moved to {backup} (the move was not confirmed)" in out.message
