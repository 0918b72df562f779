"""kubelet.restart, checkpoint.clear, node.cordon/uncordon on the simulator: order of steps, what they
leave behind when a step fails, and that a dry run changes nothing. The node actions run over both
transports (``node_rig``): SSH, and exec into the node's gpubot-actuator pod (``node_access: agent``);
the simulator applies both to the same node state, so the same history proves the same run."""

from __future__ import annotations

import asyncio

from kubernetes import client

from bot.actions.node_exec import STATE_CHANGING_PREFIXES
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.probes.kube_client import new_api_client
from tests.actions.conftest import (
    ZOMBIE_NODE,
    Rig,
    api_writes,
    arrived_via,
    offer_and_click,
    state_changes,
    step,
    via,
)

NODE_PATH = f"/api/v1/nodes/{ZOMBIE_NODE}"
CORDON = ("PATCH", NODE_PATH, {"spec": {"unschedulable": True}})
UNCORDON = ("PATCH", NODE_PATH, {"spec": {"unschedulable": False}})


async def test_checkpoint_clear_runs_in_order_and_clears_the_zombies(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "checkpoint.clear", {"node": ZOMBIE_NODE})
        assert out.status == "succeeded", out.message
        assert api_writes(sim) == [CORDON, UNCORDON]
        history = sim.ssh.history(ZOMBIE_NODE)
        assert history[0] == "systemctl stop kubelet"
        assert history[1].startswith(f"mv {CHECKPOINT_PATH} {CHECKPOINT_PATH}.bak-")
        assert history[2:] == ["systemctl start kubelet"]
        backup = history[1].split()[-1]
        assert "PodDeviceEntries" in sim.ssh.backups(ZOMBIE_NODE)[backup]
        assert '"PodDeviceEntries":null' in (sim.ssh.state(ZOMBIE_NODE).checkpoint or "")
        assert sim.ssh.state(ZOMBIE_NODE).kubelet == "active"
        assert [s.split(":")[0] for s in out.steps] == ["ok"] * 7
        assert "schedulable, kubelet active, Ready=True" in out.message
        # every node command went over the configured transport, and over nothing else
        assert arrived_via(sim) == {via(rem)}
        if via(rem) == "actuator":
            # each command was its own exec into the node's actuator pod, as an nsenter argv
            execs = [(pod, argv) for _ns, pod, _c, argv, _code in sim.api.exec_log]
            assert {pod for pod, _ in execs} == {f"gpubot-actuator-{ZOMBIE_NODE}"}
            assert all(argv[:8] == ("nsenter", "-t", "1", "-m", "-u", "-i", "-n", "--") for _, argv in execs)
            assert [" ".join(argv[8:]) for _, argv in execs] == [r.command for r in sim.ssh.command_log]


async def test_already_cordoned_node_is_neither_cordoned_nor_uncordoned(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        # somebody else cordoned it (kubectl cordon, through the API)
        api = new_api_client(sim.cluster_config())
        await asyncio.to_thread(client.CoreV1Api(api).patch_node, ZOMBIE_NODE, {"spec": {"unschedulable": True}})
        api.close()
        sim.api.writes.clear()
        out = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE})
        assert out.status == "succeeded", out.message
        assert api_writes(sim) == []
        assert sim.ssh.history(ZOMBIE_NODE) == ["systemctl restart kubelet"]
        assert any("skipped: cordon" in s and "already cordoned" in s for s in out.steps)
        assert any("skipped: uncordon" in s for s in out.steps)
        assert sim.api.store.find("Node", ZOMBIE_NODE)["spec"]["unschedulable"] is True


async def test_kubelet_restart_cordons_restarts_waits_and_uncordons(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        out = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE})
        assert out.status == "succeeded", out.message
        assert api_writes(sim) == [CORDON, UNCORDON]
        assert sim.ssh.history(ZOMBIE_NODE) == ["systemctl restart kubelet"]
        assert any(s.startswith("ok: wait for node") for s in out.steps)


async def test_kubelet_that_fails_to_start_leaves_the_node_cordoned_and_says_so(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        sim.ssh.state(ZOMBIE_NODE).kubelet_fails_start = True
        out = await offer_and_click(rem, "checkpoint.clear", {"node": ZOMBIE_NODE})
        assert out.status == "failed"
        # cordon, then no uncordon: not safe with the kubelet down
        assert api_writes(sim) == [CORDON]
        history = sim.ssh.history(ZOMBIE_NODE)
        assert history[0] == "systemctl stop kubelet" and history[1].startswith("mv ")
        assert history[2:] == ["systemctl start kubelet", "systemctl start kubelet"]  # the step, the restore
        assert sim.api.store.find("Node", ZOMBIE_NODE)["spec"]["unschedulable"] is True
        assert f"stopped at '{step(rem, ZOMBIE_NODE, 'systemctl start kubelet')}'" in out.message
        assert "CORDONED (cordoned by gpubot), kubelet failed" in out.message
        assert "checkpoint backup at" in out.message
        assert any("failed: restore: systemctl start kubelet" in s for s in out.steps)
        assert any("skipped: restore: uncordon" in s and "not safe" in s for s in out.steps)
        trail = rem.flow.audit.query()
        assert ("result", "failed") in [(e.event, e.outcome) for e in trail]
        steps = [(e.outcome, str(e.detail.get("step"))) for e in trail if e.event == "step"]
        # each step is on record before it runs, then with how it really ended
        start = step(rem, ZOMBIE_NODE, "systemctl start kubelet")
        failed_start = next(s for s in out.steps if s.startswith(f"failed: {start}"))
        assert steps.index(("starting", start)) < steps.index(("failed", failed_start))
        assert ("failed", next(s for s in out.steps if s.startswith("failed: restore: systemctl start"))) in steps
        assert not [s for s in steps if s[0] == "ok" and s[1].startswith("failed")]


async def test_kubelet_restart_failure_also_stays_cordoned(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        sim.ssh.state(ZOMBIE_NODE).kubelet_fails_start = True
        out = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE})
        assert out.status == "failed"
        assert api_writes(sim) == [CORDON]
        assert "not safe" in " ".join(out.steps)


async def test_dry_run_checks_and_plans_but_changes_nothing(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint", dry_run=True) as (sim, rem):
        for action in ("checkpoint.clear", "kubelet.restart", "node.cordon", "qgpu.restart-manager"):
            out = await offer_and_click(rem, action, {"node": ZOMBIE_NODE})
            assert out.status == "succeeded", out.message
            assert "dry run" in out.message and "nothing was changed" in out.message
            assert all(s.startswith("planned: ") for s in out.steps)
        sent = [r.command for r in sim.ssh.command_log]
        assert not [c for c in sent if c.startswith(STATE_CHANGING_PREFIXES)]
        assert state_changes(sim) == {}
        assert api_writes(sim) == []
        assert sim.api.store.find("Node", ZOMBIE_NODE)["spec"] == {}


async def test_dry_run_plan_names_the_exact_commands(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (_sim, rem):
        out = await offer_and_click(rem, "checkpoint.clear", {"node": ZOMBIE_NODE}, dry_run=True)
        plan = [s.removeprefix("planned: ") for s in out.steps]
        assert plan[0] == f"cordon node {ZOMBIE_NODE}: PATCH spec.unschedulable=true"
        assert plan[1] == step(rem, ZOMBIE_NODE, "systemctl stop kubelet")
        assert plan[2].startswith(step(rem, ZOMBIE_NODE, f"mv {CHECKPOINT_PATH} {CHECKPOINT_PATH}.bak-"))
        assert plan[3] == step(rem, ZOMBIE_NODE, "systemctl start kubelet")
        assert plan[5] == f"uncordon node {ZOMBIE_NODE}: PATCH spec.unschedulable=false"


async def test_checkpoint_clear_precondition_fails_once_the_zombies_are_gone(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        sim.ssh.state(ZOMBIE_NODE).checkpoint = '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":1}'
        out = await offer_and_click(rem, "checkpoint.clear", {"node": ZOMBIE_NODE})
        assert out.status == "precondition_failed"
        assert "no entry of a missing pod" in out.message
        assert api_writes(sim) == [] and state_changes(sim) == {}


async def test_kubelet_restart_offered_for_zombies_rechecks_them(node_rig: Rig) -> None:
    async with node_rig("zombie-checkpoint") as (sim, rem):
        sim.ssh.state(ZOMBIE_NODE).checkpoint = None
        out = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE}, finding="CHECKPOINT_ZOMBIE")
        assert out.status == "precondition_failed"
        assert api_writes(sim) == [] and state_changes(sim) == {}


async def test_cordon_then_uncordon(rig: Rig) -> None:
    async with rig("zombie-checkpoint") as (sim, rem):
        assert (await offer_and_click(rem, "node.cordon", {"node": ZOMBIE_NODE})).status == "succeeded"
        again = await offer_and_click(rem, "node.cordon", {"node": ZOMBIE_NODE})
        assert again.status == "precondition_failed" and "already cordoned" in again.message
        assert (await offer_and_click(rem, "node.uncordon", {"node": ZOMBIE_NODE})).status == "succeeded"
        assert api_writes(sim) == [CORDON, UNCORDON]
        assert state_changes(sim) == {}
