"""node_access: agent end to end: the bot execs the node reads into each node's gpubot-node pod
through the simulator's Kubernetes API (real HTTP and exec WebSocket), and every bad path ends as
a finding or a skipped line within the deadline: no agent pod (not scheduled, Pending,
crash-looping), exec refused (403), exec hanging, output cut before the exit status.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from bot.commands import parse_invocation
from bot.probes.node_agent import AGENT_SELECTOR
from bot.probes.ssh import READ_COMMANDS
from bot.report import Report
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "unreachable-node.yaml"
DEADLINE = 2.0
VIA = "exec into its gpubot-node agent"


def _scenario(agents: dict[str, str], **ssh: str) -> Any:
    """unreachable-node.yaml with every node reachable over SSH and the given agent modes."""
    data = yaml.safe_load(SCENARIO.read_text())
    for name, facts in data["nodes"].items():
        facts["ssh"] = ssh.get(name, "ok")
        if name in agents:
            facts["agent"] = agents[name]
    return scenario_from_dict(data, source="agent-modes")


async def _node_status(scenario: Any, access: str = "agent") -> tuple[Report, float, SimCluster]:
    async with SimCluster(scenario) as sim:
        service = Service(sim.settings(node_access=access, ssh_deadline_s=DEADLINE))
        try:
            started = time.monotonic()
            report = await service.run(parse_invocation(["node-status"]))
            elapsed = time.monotonic() - started
        finally:
            await service.close()
    return report, elapsed, sim


def _by_code(report: Report, code: str) -> dict[str, Any]:
    """node -> its finding of ``code`` (the evidence line starts with "node NAME: ")."""
    return {f.evidence[0].split(":")[0].removeprefix("node "): f for f in report.findings if f.code == code}


async def test_agent_reads_the_same_node_as_ssh() -> None:
    scenario = _scenario({})
    via_agent, _, sim = await _node_status(scenario)
    via_ssh, _, _ = await _node_status(scenario, "ssh")
    # every read went into an agent pod as sh -c READ_COMMAND, and nothing over SSH
    assert sim.api.exec_log
    assert all(ns == "gpubot" and pod.startswith("gpubot-node-") for ns, pod, *_ in sim.api.exec_log)
    assert {argv[2] for *_, argv, _code in sim.api.exec_log} <= READ_COMMANDS
    assert all(argv[:2] == ("sh", "-c") for *_, argv, _code in sim.api.exec_log)
    assert sim.api.writes == []

    def rows(report: Report) -> list[tuple[str, str, list[tuple[int, str]]]]:
        return [(r.node, r.kubelet, [(g.index, g.verdict) for g in r.gpus]) for r in report.nodes]

    assert rows(via_agent) == rows(via_ssh)
    assert [f.code for f in via_agent.findings] == [f.code for f in via_ssh.findings]
    assert not via_agent.skipped


async def test_refused_hanging_and_truncated_exec_each_end_as_a_finding_within_the_deadline() -> None:
    scenario = _scenario({"gpu-ok-2": "hang", "gpu-refused": "truncated", "gpu-rekeyed": "forbidden"})
    report, elapsed, _ = await _node_status(scenario)
    assert elapsed < DEADLINE + 4.0, f"took {elapsed:.1f}s with a {DEADLINE}s per-node deadline"
    unreachable = _by_code(report, "NODE_UNREACHABLE")
    assert sorted(unreachable) == ["gpu-ok-2", "gpu-refused", "gpu-rekeyed"]
    assert unreachable["gpu-ok-2"].title.startswith(f"Cannot reach node gpu-ok-2 over {VIA} (timeout)")
    assert unreachable["gpu-rekeyed"].title.startswith(f"Cannot reach node gpu-rekeyed over {VIA} (auth)")
    assert "exec refused (403)" in unreachable["gpu-rekeyed"].evidence[0]
    assert unreachable["gpu-refused"].title.startswith(f"Cannot reach node gpu-refused over {VIA} (error)")
    assert "output truncated" in unreachable["gpu-refused"].evidence[0]
    assert {s.what for s in report.skipped} == {f"physical checks on {n}" for n in unreachable}
    # the node whose agent answers is read in full
    assert [r.gpus for r in report.nodes if r.node == "gpu-ok-1"][0]


async def test_a_missing_pending_or_crash_looping_agent_is_node_agent_missing_with_why() -> None:
    scenario = _scenario({"gpu-ok-2": "missing", "gpu-refused": "pending", "gpu-rekeyed": "crashloop"})
    report, _, sim = await _node_status(scenario)
    missing = _by_code(report, "NODE_AGENT_MISSING")
    assert sorted(missing) == ["gpu-ok-2", "gpu-refused", "gpu-rekeyed"]
    assert "gpu-ok-2 (not scheduled: " in missing["gpu-ok-2"].title
    assert "gpu-refused (Pending: pod gpubot-node-gpu-refused (ContainerCreating))" in missing["gpu-refused"].title
    assert "gpu-rekeyed (crash-looping: pod gpubot-node-gpu-rekeyed, 12 restarts)" in missing["gpu-rekeyed"].title
    assert "NODE_UNREACHABLE" not in [f.code for f in report.findings]
    # nothing is exec'd into an agent that is not Ready
    assert {pod for _, pod, *_ in sim.api.exec_log} == {"gpubot-node-gpu-ok-1"}
    assert AGENT_SELECTOR == "app.kubernetes.io/name=gpubot-node"


async def test_a_tainted_node_without_agent_names_the_taint() -> None:
    data = yaml.safe_load(SCENARIO.read_text())
    for facts in data["nodes"].values():
        facts["ssh"] = "ok"
    data["nodes"]["gpu-ok-2"]["agent"] = "missing"
    node = next(o for o in data["kubernetes"]["objects"] if o["kind"] == "Node" and o["metadata"]["name"] == "gpu-ok-2")
    node.setdefault("spec", {})["taints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    report, _, _ = await _node_status(scenario_from_dict(data, source="agent-taint"))
    finding = _by_code(report, "NODE_AGENT_MISSING")["gpu-ok-2"]
    assert "(not scheduled: taint dedicated=training:NoSchedule is not tolerated)" in finding.title
