"""Issue 29 F1: a ``gpubot act`` killed at any step of a node action leaves nothing broken.

Before: a terminal run killed by SIGKILL mid-action (SSH or agent, SQLite or Kubernetes state)
left the node cordoned, its kubelet stopped and the checkpoint moved; the trail ended at "step
starting …" and every later ``gpubot act`` on the node was refused ("another action is running …
started by cli:…") forever: only a ``gpubot serve`` on the same state restored it. Now the next
gpubot process that touches the node or the state, here ``gpubot act`` or ``gpubot audit``, sees
the run once its lock on the cluster has run out, restores the node from what the run recorded
before each step (kubelet active, uncordoned, checkpoint in place or its backup named) and
records it ``interrupted``.

Each run is a real subprocess, killed when its trail says the chosen step is starting. One
simulator serves the whole module, with one node per kill point so that all the kill points of
a transport and state backend run at once; each test puts its nodes back as the scenario has them.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bot.sim.cluster import SimCluster
from bot.sim.scenario import Scenario, load_scenario
from tests.actions.conftest import ZOMBIE_NODE, scenario
from tests.faults.cli_rig import CliRun, Kill, kill_all, lease_run_out, running, trail
from tests.faults.conftest import checkpoint_kept, end_state

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: every step of every node action, as its "starting" entry in the trail names it
STEPS = {
    "checkpoint.clear": (
        "cordon node", "systemctl stop kubelet", ": mv ", "systemctl start kubelet", "wait for node", "uncordon node",
    ),
    "kubelet.restart": ("cordon node", "systemctl restart kubelet", "wait for node", "uncordon node"),
}
#: one node per kill point, so every kill point of a combination runs at once
POINTS = [(action, step) for action, steps in STEPS.items() for step in steps]


def fleet(n: int) -> Scenario:
    """The zombie-checkpoint cluster with ``n`` more nodes like its zombie node (same checkpoint
    of force-deleted pods, same idle cards), named ``gpu-kill-<i>``."""
    base = load_scenario(scenario("zombie-checkpoint"))
    proto = next(o for o in base.objects if o.get("kind") == "Node" and o["metadata"]["name"] == ZOMBIE_NODE)
    objects, nodes = list(base.objects), dict(base.nodes)
    for i in range(n):
        name = f"gpu-kill-{i}"
        obj = copy.deepcopy(proto)
        obj["metadata"]["name"] = name
        obj["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        labels = obj["metadata"].setdefault("labels", {})
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = name
        objects.append(obj)
        nodes[name] = dataclasses.replace(copy.deepcopy(base.nodes[ZOMBIE_NODE]), name=name)
    return dataclasses.replace(base, objects=objects, nodes=nodes)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SimCluster]:
    workdir = tmp_path_factory.mktemp("killed-cli")
    async with SimCluster(fleet(len(POINTS)), workdir=workdir / "sim", remediation=True) as sim:
        yield sim


def reset(sim: SimCluster, node: str) -> str:
    """Put ``node`` back as the scenario has it (kubelet active, schedulable, the zombie
    checkpoint), slow enough that a kill lands inside the step it was aimed at; its checkpoint."""
    facts = sim.ssh.state(node)
    original: str = sim.ssh.state(ZOMBIE_NODE).checkpoint or ""
    facts.checkpoint = original
    facts.kubelet = "active"
    obj = sim.api.store.find("Node", node)
    assert obj is not None and not (obj.get("spec") or {}).get("unschedulable"), f"{node} was left cordoned"
    sim.api.lifecycle.heartbeat_delay_s.pop(node, None)
    sim.api.lifecycle.heartbeat(node)
    facts.latency_ms = 150
    return original


def let_kubelet_post(sim: SimCluster, node: str) -> None:
    """The Ready wait was held up on purpose; a running kubelet posts its heartbeat now."""
    sim.api.lifecycle.heartbeat_delay_s.pop(node, None)
    if sim.ssh.state(node).kubelet == "active":
        sim.api.lifecycle.heartbeat(node)


@pytest.mark.parametrize(
    ("access", "state", "after"),
    [
        ("ssh", "sqlite", "audit"),
        ("agent", "sqlite", "act"),
        ("ssh", "kubernetes", "act"),
        ("agent", "kubernetes", "audit"),
    ],
)
async def test_a_cli_killed_at_any_step_is_restored_by_the_next_process(
    sim: SimCluster, tmp_path: Path, access: str, state: str, after: str
) -> None:
    run = CliRun(sim, tmp_path, access, state, "cli").write()
    store, audit = await asyncio.to_thread(run.shared)
    known = {e.action_id for e in await trail(audit)}
    kills = [Kill(action, f"gpu-kill-{i}", step) for i, (action, step) in enumerate(POINTS)]
    original = {k.node: reset(sim, k.node) for k in kills}
    for kill in kills:
        if kill.step == "wait for node":
            sim.api.lifecycle.heartbeat_delay_s[kill.node] = 3600  # killed while it waits for Ready
        if kill.step == "uncordon node":
            # the last step is one PATCH: the node's slow answers after it (the kubelet's state,
            # the check) keep the run from ending before the kill lands
            sim.ssh.state(kill.node).latency_ms = 1000
    await kill_all(run, audit, kills, known=known)
    for kill in kills:
        let_kubelet_post(sim, kill.node)
    await lease_run_out(sim, [k.node for k in kills])

    # the next process on this state: a terminal action (on one of the nodes) or the trail
    argv = ("audit",) if after == "audit" else ("act", "kubelet.restart", "--node", kills[0].node, "--dry-run")
    code, out = await run.run(*argv, timeout=180)
    assert code == 0, out
    # each run is said as recovered (a node whose lock could not be read at once, on a loaded
    # machine, is restored by the act's own claim on it instead: still recorded below)
    assert "recovered:" in out, out

    for kill in kills:
        where = f"{kill.action} killed at '{kill.step}' on {kill.node}"
        assert end_state(sim, kill.node) == ("active", False), where
        assert checkpoint_kept(sim, original[kill.node], kill.node), where
        entries = await trail(audit, kill.action_id)
        last = entries[-1]
        assert (last.event, last.outcome) == ("interrupted", "interrupted"), (where, [e.event for e in entries])
        restore = str(last.detail.get("restore"))
        assert "schedulable, kubelet active, Ready=True" in restore, (where, restore)
        if sim.ssh.state(kill.node).checkpoint != original[kill.node]:
            # moved before the kill: kept in its backup, and the record names it
            assert any(path in restore for path in sim.ssh.backups(kill.node)), (where, restore)
        record = await asyncio.to_thread(store.get, kill.action_id)
        assert record is not None and record.state == "interrupted", where
    assert not await asyncio.to_thread(running, store)


@pytest.mark.parametrize(("access", "state"), [("ssh", "sqlite"), ("agent", "kubernetes")])
async def test_sigterm_and_sighup_cancel_the_run_like_ctrl_c(
    sim: SimCluster, tmp_path: Path, access: str, state: str
) -> None:
    run = CliRun(sim, tmp_path, access, state, "cli").write()
    store, audit = await asyncio.to_thread(run.shared)
    known = {e.action_id for e in await trail(audit)}
    kills = [
        Kill("checkpoint.clear", "gpu-kill-0", ": mv ", sig=signal.SIGTERM),
        Kill("checkpoint.clear", "gpu-kill-1", "systemctl stop kubelet", sig=signal.SIGHUP),
    ]
    original = {k.node: reset(sim, k.node) for k in kills}
    earlier = {k.node: len(sim.ssh.history(k.node)) for k in kills}  # the module's sim has run others
    await kill_all(run, audit, kills, known=known)
    for kill in kills:
        # the process itself stopped at its step, restored the node and recorded it, then exited
        assert f"stopped by {kill.sig.name}" in kill.out, kill.out
        assert end_state(sim, kill.node) == ("active", False), kill.out
        assert checkpoint_kept(sim, original[kill.node], kill.node)
        record = await asyncio.to_thread(store.get, kill.action_id)
        assert record is not None and record.state == "failed", record
        assert "was cancelled at" in (record.result_summary or ""), record.result_summary
        entries = await trail(audit, kill.action_id)
        assert (entries[-1].event, entries[-1].outcome) == ("result", "failed")
        started = any("restore: systemctl start kubelet" in str(e.detail.get("step")) for e in entries)
        ran = sim.ssh.history(kill.node)[earlier[kill.node]:]
        if any("stop kubelet" in command for command in ran):  # the stop reached the node: started again
            assert started, (ran, [e.detail.get("step") for e in entries])
        else:  # a signal as the stop was starting can come before it is sent: nothing to start then
            assert kill.step == "systemctl stop kubelet" and not started, ran
