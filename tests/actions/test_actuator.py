"""Node actions through the gpubot-actuator pod (``node_access: agent``), end to end on the simulator.

The bot execs each write into the node's actuator pod through the simulator's Kubernetes API
(real HTTP and the exec WebSocket, through the official client), as ``nsenter … -- COMMAND``.
What is proved here beyond the node-action tests (which run over both transports): a node without
an actuator that can act is refused before any step and the audit says why; an exec the API
refuses (403), before the run or in the middle of it, is reported as it happened; the simulated
actuator runs its own allow-list and nothing else, and that list is the bot's; the Slack and the
``gpubot act`` paths run over it.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.stream import stream

from bot.actions import nodeops
from bot.actions.actuator import ACTUATOR_COMMANDS, actuator_allows, actuator_argv
from bot.actions.node_exec import STATE_CHANGING_PREFIXES, move_checkpoint_command, new_backup_path
from bot.cli import main
from bot.errors import ScenarioError
from bot.probes.kube_client import new_api_client
from bot.probes.node_agent import NSENTER
from bot.probes.ssh import READ_COMMANDS
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario, scenario_from_dict
from bot.state.records import PendingAction
from tests import yaml_data
from tests.actions.conftest import (
    APPROVER,
    REQUESTER,
    ZOMBIE_NODE,
    api_writes,
    arrived_via,
    offer_and_click,
    remediation_rig,
    scenario,
    state_changes,
)
from tests.actions.slack_rig import button_text, mock_slack_server, slack_rig
from tests.slack.mock_slack_api import MockSlackApi

OTHER_NODE = "tcs-10-29-25-6"
POD = f"gpubot-actuator-{ZOMBIE_NODE}"


def refusals(rem: Any) -> list[str]:
    return [str(e.detail.get("reason", "")) for e in rem.flow.audit.query() if e.event == "refuse"]


async def exec_into(sim: SimCluster, pod: str, argv: list[str]) -> tuple[str, int]:
    """(stdout+stderr, exit code) of one exec through the official client's WebSocket."""
    api = new_api_client(sim.cluster_config())

    def run() -> tuple[str, int]:
        resp = stream(
            client.CoreV1Api(api).connect_get_namespaced_pod_exec,
            pod,
            "gpubot",
            container="actuator",
            command=argv,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        resp.run_forever(timeout=10)
        text = (resp.read_stdout() or "") + (resp.read_stderr() or "")
        code = resp.returncode
        resp.close()
        return text, int(code)

    try:
        return await asyncio.to_thread(run)
    finally:
        api.close()


async def test_without_the_remediation_component_a_node_action_is_refused_before_any_step(tmp_path: Path) -> None:
    async with remediation_rig(
        tmp_path, "zombie-checkpoint", ready_timeout_s=5.0, remediation=False, node_access="agent"
    ) as (sim, rem):
        for action in ("kubelet.restart", "checkpoint.clear"):
            out = await offer_and_click(rem, action, {"node": ZOMBIE_NODE})
            assert out.status == "precondition_failed", out.message
            assert (
                f"no gpubot-actuator pod can act on node {ZOMBIE_NODE}: not scheduled: no gpubot-actuator "
                "DaemonSet in the namespace (is the remediation component installed?)" in out.message
            )
        # nothing was written, nothing ran on the node, nothing was exec'd
        assert api_writes(sim) == [] and state_changes(sim) == {} and sim.api.exec_log == []
        reasons = refusals(rem)
        assert len(reasons) == 2 and all("is the remediation component installed?" in r for r in reasons)
        events = [e.event for e in rem.flow.audit.query()]
        assert "start" not in events and "step" not in events


async def test_a_pending_or_crash_looping_actuator_refuses_with_why(tmp_path: Path) -> None:
    loaded = load_scenario(scenario("zombie-checkpoint"))
    loaded.nodes[ZOMBIE_NODE].actuator = "crashloop"
    loaded.nodes[OTHER_NODE].actuator = "pending"
    async with remediation_rig(tmp_path, loaded, ready_timeout_s=5.0, node_access="agent") as (sim, rem):
        crash = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE})
        pending = await offer_and_click(rem, "kubelet.restart", {"node": OTHER_NODE})
        assert crash.status == pending.status == "precondition_failed"
        assert f"crash-looping: pod {POD}, 12 restarts" in crash.message
        assert f"Pending: pod gpubot-actuator-{OTHER_NODE} (ContainerCreating)" in pending.message
        assert api_writes(sim) == [] and state_changes(sim) == {} and sim.api.exec_log == []
        assert len(refusals(rem)) == 2


async def test_exec_refused_by_the_api_before_the_run_is_a_refusal(tmp_path: Path) -> None:
    loaded = load_scenario(scenario("zombie-checkpoint"))
    loaded.nodes[ZOMBIE_NODE].actuator = "forbidden"  # the API answers the exec with 403
    async with remediation_rig(tmp_path, loaded, ready_timeout_s=5.0, node_access="agent") as (sim, rem):
        out = await offer_and_click(rem, "checkpoint.clear", {"node": ZOMBIE_NODE})
        assert out.status == "precondition_failed"
        assert f"exec into gpubot/{POD} refused (403)" in out.message
        assert api_writes(sim) == [] and state_changes(sim) == {}
        (reason,) = refusals(rem)
        assert "refused (403)" in reason


async def test_an_actuator_that_never_answers_costs_the_command_deadline_and_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_scenario(scenario("zombie-checkpoint"))
    loaded.nodes[ZOMBIE_NODE].actuator = "hang"  # the exec is upgraded, then nothing comes back
    # a node command's deadline is max(systemctl's floor, ssh_deadline_s): both short here, so the
    # test waits 3 s for the hang instead of the production floor's 30 s
    monkeypatch.setattr(nodeops, "MIN_SYSTEMCTL_TIMEOUT_S", 3.0)
    async with remediation_rig(
        tmp_path, loaded, ready_timeout_s=5.0, node_access="agent", ssh_deadline_s=3.0
    ) as (sim, rem):
        started = asyncio.get_running_loop().time()
        out = await offer_and_click(rem, "kubelet.restart", {"node": ZOMBIE_NODE})
        took = asyncio.get_running_loop().time() - started
        assert out.status == "precondition_failed"
        assert f"no exit status from gpubot/{POD} within 3s; its outcome is unknown" in out.message
        # one command's deadline and the refusal: never a hang
        assert took < 3 + 10, f"took {took:.1f}s"
        assert api_writes(sim) == [] and state_changes(sim) == {}


async def test_exec_refused_in_the_middle_of_a_run_fails_truthfully(tmp_path: Path) -> None:
    async with remediation_rig(tmp_path, "zombie-checkpoint", ready_timeout_s=5.0, node_access="agent") as (sim, rem):

        async def revoke(_record: PendingAction) -> None:
            # the precondition held; from now on the API refuses every exec into the actuator
            sim.api.faults.add(ApiFault(match=f"/pods/{POD}/exec", status=403))

        record = await rem.offer("kubelet.restart", {"node": ZOMBIE_NODE}, cluster="", requested_by=REQUESTER)
        assert record is not None
        out = await rem.click(record.id, APPROVER, on_running=revoke)
        assert out.status == "failed"
        # the restart never reached the node: its kubelet never stopped
        assert state_changes(sim) == {} and sim.ssh.state(ZOMBIE_NODE).kubelet == "active"
        assert f"stopped at 'actuator {ZOMBIE_NODE}: systemctl restart kubelet'" in out.message
        assert "refused (403)" in out.message
        # the bot cannot read the kubelet any more, so it does not pretend: cordoned, kubelet unknown
        assert "CORDONED (cordoned by gpubot), kubelet unknown" in out.message
        assert sim.api.store.find("Node", ZOMBIE_NODE)["spec"]["unschedulable"] is True
        trail = rem.flow.audit.query(action_id=record.id)
        assert trail[-1].event == "result" and trail[-1].outcome == "failed"
        steps = [(e.outcome, str(e.detail.get("step"))) for e in trail if e.event == "step"]
        assert ("starting", f"actuator {ZOMBIE_NODE}: systemctl restart kubelet") in steps
        assert any(o == "failed" and "restore: systemctl start kubelet" in s for o, s in steps)
        assert not [s for o, s in steps if o == "ok" and "systemctl" in s]


async def test_the_simulated_actuator_runs_its_allow_list_and_nothing_else(tmp_path: Path) -> None:
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim", remediation=True) as sim:
        refused = [
            [*NSENTER, "rm", "-rf", "/var/lib/kubelet"],
            [*NSENTER, "nvidia-smi"],  # a read, but not the actuator's
            [*NSENTER, "systemctl", "restart", "containerd"],
            ["systemctl", "stop", "kubelet"],  # not through nsenter: not the host's systemd
            [*NSENTER, "sh", "-c", "systemctl stop kubelet"],
        ]
        for argv in refused:
            text, code = await exec_into(sim, POD, argv)
            assert code == 127 and "not found" in text, argv
        assert sim.ssh.history(ZOMBIE_NODE) == [] and sim.ssh.state(ZOMBIE_NODE).kubelet == "active"
        assert [r.allowed for r in sim.ssh.command_log] == [False] * 4  # the argv without nsenter never got there
        # the bot's whole list is what the simulated actuator runs
        backup = new_backup_path("Ab3_x9QkLm2P")
        for command in [*sorted(ACTUATOR_COMMANDS), move_checkpoint_command(backup)]:
            _text, code = await exec_into(sim, POD, actuator_argv(command))
            assert code != 127, command
        assert sim.ssh.history(ZOMBIE_NODE)[-1] == f"mv {backup.split('.bak-')[0]} {backup}"


def test_the_bot_never_builds_an_actuator_command_off_its_list() -> None:
    for command in READ_COMMANDS - ACTUATOR_COMMANDS:
        assert not actuator_allows(command)
        with pytest.raises(ValueError):
            actuator_argv(command)
    assert actuator_argv("systemctl stop kubelet") == [*NSENTER, "systemctl", "stop", "kubelet"]
    for bad in ("mv /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint /tmp/x", "systemctl stop kubelet; id"):
        assert not actuator_allows(bad)
    assert all(
        c.startswith(STATE_CHANGING_PREFIXES) or c.startswith(("systemctl is-active", "cat "))
        for c in ACTUATOR_COMMANDS
    )


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


async def test_the_slack_loop_reads_through_the_agent_and_acts_through_the_actuator(
    tmp_path: Path, slack_api: MockSlackApi
) -> None:
    async with slack_rig(tmp_path, slack_api, node_access="agent") as rig:
        offered = await rig.command()
        assert "CHECKPOINT_ZOMBIE" in rig.last_report_text()
        await rig.click(offered[button_text("checkpoint.clear", ZOMBIE_NODE)][0])
        history = rig.sim.ssh.history(ZOMBIE_NODE)
        assert history[0] == "systemctl stop kubelet" and history[1].startswith("mv ")
        assert history[2:] == ["systemctl start kubelet"]
        # the diagnosis read through the agent, the action wrote through the actuator, nothing used SSH
        assert arrived_via(rig.sim) == {"agent", "actuator"}
        assert {r.via for r in rig.sim.ssh.command_log if r.command in history} == {"actuator"}
        events = [(e.event, e.outcome) for e in rig.rem.flow.audit.query()]
        assert ("result", "ok") in events
        thread = [
            c.body["text"] for c in slack_api.of("chat.postMessage") if c.body.get("text", "").startswith("*Steps*")
        ]
        assert thread and f"actuator {ZOMBIE_NODE}: systemctl stop kubelet" in thread[0]


def test_gpubot_act_runs_a_node_action_through_the_actuator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUBOT_STATE_PATH", str(tmp_path / "state.db"))
    monkeypatch.setenv("GPUBOT_NODE_READY_TIMEOUT_S", "5")
    monkeypatch.setenv("GPUBOT_NODE_ACCESS", "agent")
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{ZOMBIE_NODE}\n"))
    code = main(["act", "kubelet.restart", "--node", ZOMBIE_NODE, "--scenario", str(scenario("zombie-checkpoint"))])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"actuator {ZOMBIE_NODE}: systemctl restart kubelet" in out
    assert "succeeded" in out and "step 4: ok: uncordon node" in out
    assert main(["audit", "--json"]) == 0
    entries = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert entries[-1]["event"] == "result" and entries[-1]["outcome"] == "ok"


async def test_a_scenario_with_remediation_has_an_actuator_per_node_section(tmp_path: Path) -> None:
    loaded = load_scenario(scenario("zombie-checkpoint"))
    loaded.remediation = True
    loaded.nodes[OTHER_NODE].actuator = "missing"
    async with SimCluster(loaded, workdir=tmp_path / "sim") as sim:
        api = new_api_client(sim.cluster_config())
        try:
            core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
            pods = await asyncio.to_thread(
                core.list_namespaced_pod, "gpubot", label_selector="app.kubernetes.io/name=gpubot-actuator"
            )
            daemonsets = await asyncio.to_thread(
                apps.list_namespaced_daemon_set, "gpubot", label_selector="app.kubernetes.io/name=gpubot-actuator"
            )
        finally:
            api.close()
    assert [(p.metadata.name, p.spec.node_name) for p in pods.items] == [(POD, ZOMBIE_NODE)]
    (pod,) = pods.items
    assert pod.spec.host_pid and pod.spec.containers[0].security_context.privileged
    assert [d.metadata.name for d in daemonsets.items] == ["gpubot-actuator"]


def test_scenario_knobs_are_checked() -> None:
    data = yaml_data.load_file(scenario("unreachable-node"))
    data["remediation"] = "yes"
    next(iter(data["nodes"].values()))["actuator"] = "sleepy"
    with pytest.raises(ScenarioError) as raised:
        scenario_from_dict(data, source="bad-knobs")
    assert "remediation: must be true or false" in str(raised.value)
    assert "actuator: unknown mode 'sleepy'" in str(raised.value)
