"""Issue 29 F2: the per-node lock lives on the cluster, where every actor sees it.

Before: the lock was a row in the state file, and the default state file was relative to the
working directory, so two ``gpubot act`` runs with different state files (two terminals, or a
terminal beside a bot on ``state: kubernetes``) both acted on one node: the checkpoint was moved
while the other run's kubelet ran. Now a node action first takes the Lease
``gpubot-action-<node>`` in the configured namespace of the node's cluster, renews it while it
runs and writes what it changed onto it before each step: a second actor is refused by name
while it is held, and once its holder has died and it has run out, the next actor restores the
node from it, whatever state that actor keeps, and the dead run's own state learns it was
restored when it is next opened.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.oneshot import shared_remediation_state
from bot.probes.clients import KubeClients
from bot.remediation import RemediationService
from bot.sim.cluster import SimCluster
from tests.actions.conftest import APPROVER, REQUESTER, ZOMBIE_NODE, scenario
from tests.faults.cli_rig import (
    NAMESPACE,
    CliRun,
    Kill,
    held_for_its_holder,
    kill_all,
    lease_left_s,
    lease_run_out,
    read_until,
    running,
    trail,
    until,
)
from tests.faults.conftest import checkpoint_kept, end_state

pytestmark = pytest.mark.asyncio(loop_scope="module")

NODE = ZOMBIE_NODE


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SimCluster]:
    workdir = tmp_path_factory.mktemp("node-lease")
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=workdir / "sim", remediation=True) as sim:
        yield sim


async def killed_beside_another_state(sim: SimCluster, tmp_path: Path) -> tuple[CliRun, CliRun, Kill]:
    """A terminal on its own state file killed at the checkpoint's move, and a terminal on the
    API state (the other transport) that has never seen that run."""
    dead = CliRun(sim, tmp_path, "ssh", "sqlite", "dead").write()
    other = CliRun(sim, tmp_path, "agent", "kubernetes", "other").write()
    _store, dead_audit = await asyncio.to_thread(dead.shared)
    kill = Kill("checkpoint.clear", NODE, ": mv ")
    await kill_all(dead, dead_audit, [kill])
    return dead, other, kill


@pytest.fixture
def original(sim: SimCluster) -> str:
    """The node as the scenario has it; its zombie checkpoint."""
    facts = sim.ssh.state(NODE)
    if not hasattr(sim, "_checkpoint"):
        sim._checkpoint = facts.checkpoint or ""  # type: ignore[attr-defined]
    facts.checkpoint, facts.kubelet, facts.latency_ms = sim._checkpoint, "active", 100  # type: ignore[attr-defined]
    sim.api.lifecycle.heartbeat_delay_s.pop(NODE, None)
    sim.api.lifecycle.heartbeat(NODE)
    assert end_state(sim) == ("active", False)
    text: str = sim._checkpoint  # type: ignore[attr-defined]
    return text


async def test_two_clis_with_different_state_files_never_act_on_one_node_at_once(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    first = CliRun(sim, tmp_path, "ssh", "sqlite", "first").write()
    second = CliRun(sim, tmp_path, "agent", "sqlite", "second").write()
    _store, audit = await asyncio.to_thread(first.shared)
    sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600  # the first run waits for Ready until we let it
    proc = await first.start("act", "checkpoint.clear", "--node", NODE, "--yes")

    async def waiting_for_ready() -> bool:
        return any(
            e.outcome == "starting" and "wait for node" in str(e.detail.get("step")) for e in await trail(audit)
        )

    await until(waiting_for_ready)
    before = sim.ssh.history(NODE)
    code, out = await second.run("act", "kubelet.restart", "--node", NODE, "--yes")
    assert code == 1, out
    assert f"another action is running on {NODE} (checkpoint.clear, started by cli:" in out, out
    assert sim.ssh.history(NODE) == before, "the second terminal changed the node while the first acted on it"

    sim.api.lifecycle.heartbeat_delay_s.pop(NODE, None)
    sim.api.lifecycle.heartbeat(NODE)
    out_first = (await asyncio.wait_for(proc.communicate(), 60))[0].decode()
    assert proc.returncode == 0 and "succeeded" in out_first, out_first
    assert lease_left_s(sim, NODE) == 0.0, "the lock was not given back"
    code, out = await second.run("act", "kubelet.restart", "--node", NODE, "--yes")
    assert code == 0 and "succeeded" in out, out
    assert end_state(sim) == ("active", False)


async def test_a_cli_beside_a_bot_is_refused_while_the_bot_acts(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    settings = sim.settings(
        approvers={"*": (APPROVER,)}, state="kubernetes", namespace=NAMESPACE, node_ready_timeout_s=30.0,
    )
    clients = KubeClients(settings)
    try:
        # the bot on the replicas' shared state; the terminal keeps its own state file
        bot = RemediationService(settings, clients, state=shared_remediation_state(settings, clients))
        offer = await bot.offer("checkpoint.clear", {"node": NODE}, cluster="", requested_by=REQUESTER)
        assert offer is not None
        sim.api.lifecycle.heartbeat_delay_s[NODE] = 3600
        done = len(sim.ssh.history(NODE))
        click = asyncio.create_task(bot.click(offer.id, APPROVER))
        await until(lambda: len(sim.ssh.history(NODE)) >= done + 3, timeout=60)  # stopped, moved, started
        cli = CliRun(sim, tmp_path, "ssh", "sqlite", "terminal").write()
        before = sim.ssh.history(NODE)
        code, out = await cli.run("act", "kubelet.restart", "--node", NODE, "--yes")
        assert code == 1, out
        assert f"another action is running on {NODE} (checkpoint.clear, started by {APPROVER}" in out, out
        assert sim.ssh.history(NODE) == before
        sim.api.lifecycle.heartbeat_delay_s.pop(NODE, None)
        sim.api.lifecycle.heartbeat(NODE)
        outcome = await asyncio.wait_for(click, 60)
        assert outcome.status == "succeeded", outcome.message
    finally:
        await clients.close()


async def test_a_dead_terminal_is_restored_by_a_terminal_with_another_state_and_its_own_state_learns_it(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    dead, other, kill = await killed_beside_another_state(sim, tmp_path)
    dead_store, _dead_audit = await asyncio.to_thread(dead.shared)
    other_store, other_audit = await asyncio.to_thread(other.shared)
    # held until it runs out: refused by name, and told for how long (unless it ran out already)
    code, out = await other.run("act", "kubelet.restart", "--node", NODE, "--yes")
    if code != 0:
        assert code == 1 and "its lock on the cluster runs out in" in out, out
        await lease_run_out(sim, [NODE])
        code, out = await other.run("act", "kubelet.restart", "--node", NODE, "--yes")
    assert code == 0 and "succeeded" in out, out
    assert f"recovered: checkpoint.clear on node/{NODE}" in out, out
    assert end_state(sim) == ("active", False)
    assert checkpoint_kept(sim, original)
    restored = await trail(other_audit, kill.action_id)
    assert restored and restored[-1].event == "interrupted", restored
    assert "schedulable, kubelet active" in str(restored[-1].detail.get("restore"))

    # the dead run's own state still says running until a process opens it: then it is ended
    # interrupted, and the node (another run's since) is not touched again
    (left,) = await asyncio.to_thread(running, dead_store)
    assert left.id == kill.action_id
    history = sim.ssh.history(NODE)
    code, out = await dead.run("audit")
    assert code == 0, out
    assert f"audit trail: {dead.state_path}" in out and "recovered:" in out, out
    assert sim.ssh.history(NODE) == history
    record = await asyncio.to_thread(dead_store.get, kill.action_id)
    assert record is not None and record.state == "interrupted"
    assert "another gpubot process took its node over" in (record.result_summary or "")
    assert not await asyncio.to_thread(running, dead_store)
    assert not await asyncio.to_thread(running, other_store)


async def test_a_lock_that_runs_out_while_the_terminal_asks_is_restored_and_said_before_the_run(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    """The race the full suite hit: the dead run's lock was still live when ``gpubot act`` looked
    for abandoned runs, and ran out before the run took the node. The run restored the node when
    it took it, silently: no "recovered:" line, and the plan shown had been read off the broken node."""
    dead, other, kill = await killed_beside_another_state(sim, tmp_path)
    _other_store, other_audit = await asyncio.to_thread(other.shared)
    async with held_for_its_holder(sim, NODE):  # live while the terminal looks and plans
        proc = await other.start("act", "kubelet.restart", "--node", NODE, stdin=asyncio.subprocess.PIPE)
        shown = await read_until(proc, "Type the target name")
    assert "recovered:" not in shown and f"leave node {NODE} cordoned (it already is)" in shown, shown
    await lease_run_out(sim, [NODE])
    assert proc.stdin is not None
    proc.stdin.write(f"{NODE}\n".encode())
    out = shown + (await asyncio.wait_for(proc.communicate(), 90))[0].decode()
    assert proc.returncode == 0 and "succeeded" in out, out
    assert f"recovered: checkpoint.clear on node/{NODE}" in out, out
    assert out.index("recovered:") < out.index("step 1:"), out
    assert end_state(sim) == ("active", False)
    assert checkpoint_kept(sim, original)
    restored = await trail(other_audit, kill.action_id)
    assert restored and restored[-1].event == "interrupted", restored


async def test_the_next_act_on_the_same_state_restores_a_killed_run_instead_of_refusing_forever(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    """The issue's exact report: the next ``gpubot act`` on the same state was refused forever."""
    run = CliRun(sim, tmp_path, "agent", "sqlite", "same").write()
    store, audit = await asyncio.to_thread(run.shared)
    kill = Kill("checkpoint.clear", NODE, "systemctl stop kubelet", sig=signal.SIGKILL)
    await kill_all(run, audit, [kill])
    await lease_run_out(sim, [NODE])
    code, out = await run.run("act", "kubelet.restart", "--node", NODE, "--yes")
    assert code == 0 and "succeeded" in out, out
    assert "recovered: checkpoint.clear" in out and "another action is running" not in out, out
    assert end_state(sim) == ("active", False)
    assert checkpoint_kept(sim, original)
    record = await asyncio.to_thread(store.get, kill.action_id)
    assert record is not None and record.state == "interrupted"


async def test_the_bots_sweep_restores_a_node_a_dead_terminal_left_without_anyone_touching_it(
    sim: SimCluster, original: str, tmp_path: Path
) -> None:
    """A terminal killed beside a bot on another state: the bot's periodic recovery finds the
    run on the node's Lease once it has run out and restores the node by itself."""
    dead = CliRun(sim, tmp_path, "ssh", "sqlite", "dead").write()
    _store, audit = await asyncio.to_thread(dead.shared)
    kill = Kill("checkpoint.clear", NODE, "systemctl stop kubelet")
    await kill_all(dead, audit, [kill])
    await lease_run_out(sim, [NODE])
    settings = sim.settings(approvers={"*": (APPROVER,)}, state="kubernetes", namespace=NAMESPACE)
    clients = KubeClients(settings)
    try:
        bot = RemediationService(settings, clients, state=shared_remediation_state(settings, clients))
        ended = await bot.recover()  # what serve's sweep runs
    finally:
        await clients.close()
    assert [r.id for r in ended] == [kill.action_id] and ended[0].state == "interrupted", ended
    assert end_state(sim) == ("active", False)
    assert checkpoint_kept(sim, original)
