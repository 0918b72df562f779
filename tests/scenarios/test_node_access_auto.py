"""``node_access: auto`` (the default) end to end on the simulator: the agent where its pods run,
SSH where only a key is configured, and otherwise no node reads with one line saying how to turn
them on; decided once per process; every node-read failure names the transport and the switch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.commands import parse_invocation
from bot.probes import node_access
from bot.probes.clients import KubeClients
from bot.report import Report
from bot.service import Service
from bot.settings import Settings
from bot.sim.cluster import SimCluster
from bot.sim.scenario import Scenario, scenario_from_dict
from tests import yaml_data

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "unreachable-node.yaml"


def _scenario(*, agents: bool) -> Scenario:
    """unreachable-node.yaml with every node reachable over SSH, with or without agent pods."""
    data: dict[str, Any] = yaml_data.load_file(SCENARIO)
    for facts in data["nodes"].values():
        facts["ssh"] = "ok"
        if not agents:
            facts["agent"] = "missing"
    return scenario_from_dict(data, source="auto")


def _without_ssh(settings: Settings) -> Settings:
    clusters = tuple(replace(c, ssh_key_path="", ssh_known_hosts="") for c in settings.clusters)
    return replace(settings, clusters=clusters, ssh_key_path="", ssh_known_hosts="")


async def _node_status(sim: SimCluster, settings: Settings) -> Report:
    service = Service(settings)
    try:
        return await service.run(parse_invocation(["node-status"]))
    finally:
        await service.close()


@pytest.fixture(autouse=True)
def _fresh_decisions() -> None:
    node_access.forget()


async def test_auto_reads_through_the_agent_when_its_pods_run() -> None:
    async with SimCluster(_scenario(agents=True)) as sim:
        report = await _node_status(sim, sim.settings(node_access="auto"))
    assert sim.api.exec_log and all(pod.startswith("gpubot-node-") for _, pod, *_ in sim.api.exec_log)
    assert {r.via for r in sim.ssh.command_log} == {"agent"}, "the agent is there: nothing goes over SSH"
    assert {r.node for r in report.nodes if r.gpus} == {"gpu-ok-1", "gpu-ok-2", "gpu-refused", "gpu-rekeyed"}


async def test_auto_reads_over_ssh_when_no_agent_runs_and_a_key_is_set() -> None:
    async with SimCluster(_scenario(agents=False)) as sim:
        report = await _node_status(sim, sim.settings(node_access="auto"))
    assert not sim.api.exec_log
    assert {r.via for r in sim.ssh.command_log} == {"ssh"}
    assert not [f for f in report.findings if f.code == "NODE_AGENT_MISSING"], "SSH was chosen, not the agent"
    assert {r.node for r in report.nodes if r.gpus} == {"gpu-ok-1", "gpu-ok-2", "gpu-refused", "gpu-rekeyed"}


async def test_auto_without_agent_or_key_reads_no_node_and_says_how_in_one_line() -> None:
    async with SimCluster(_scenario(agents=False)) as sim:
        report = await _node_status(sim, _without_ssh(sim.settings(node_access="auto")))
    assert not sim.api.exec_log and not sim.ssh.command_log
    node_skips = [s for s in report.skipped if "physical checks" in s.what]
    assert len(node_skips) == 1, report.skipped
    why = node_skips[0].why
    assert "no gpubot-node agent pods in namespace gpubot" in why and "no SSH key" in why
    assert "nodeAgent.enabled" in why and "--node-access ssh" in why
    codes = {f.code for f in report.findings}
    assert not codes & {"NODE_UNREACHABLE", "NODE_AGENT_MISSING"}, "no transport chosen: no per-node noise"


async def test_the_decision_is_made_once_per_process() -> None:
    async with SimCluster(_scenario(agents=True)) as sim:
        settings = sim.settings(node_access="auto")
        clients = KubeClients(settings)
        try:
            reads, cluster = clients.for_cluster("").reads, settings.cluster(None)
            first = await node_access.decide(settings, cluster, reads)
            asked = sim.api.stats.requests
            again = await node_access.decide(settings, cluster, reads)
        finally:
            await clients.close()
    assert first.transport == again.transport == "agent"
    assert sim.api.stats.requests == asked, "a second decision costs no API request"
    # the first hands its freshly listed pods to the agent transport; a kept one carries none
    assert first.agent_pods and all(p["metadata"]["name"].startswith("gpubot-node-") for p in first.agent_pods)
    assert again.agent_pods is None, "pods kept for good would go stale"


async def test_the_agent_pods_the_decision_listed_are_not_listed_again() -> None:
    async with SimCluster(_scenario(agents=True)) as sim:
        settings = sim.settings(node_access="auto")
        report = await _node_status(sim, settings)
        listed = sim.api.stats.per_path[f"/api/v1/namespaces/{settings.namespace}/pods"]
    assert {r.via for r in sim.ssh.command_log} == {"agent"}
    assert {r.node for r in report.nodes if r.gpus} == {"gpu-ok-1", "gpu-ok-2", "gpu-refused", "gpu-rekeyed"}
    assert listed == 1, "the agent transport takes the pods the decision found: one list, not two"


@pytest.mark.parametrize(("access", "first", "not_shown"), [
    ("ssh", "the bot's SSH key", "pods/exec"),
    ("agent", "pods/exec", "known_hosts"),
])
async def test_an_unreachable_node_leads_with_the_fix_of_its_transport(access: str, first: str, not_shown: str) -> None:
    scenario = scenario_from_dict(yaml_data.load_file(SCENARIO), source="unreachable")
    async with SimCluster(scenario) as sim:
        report = await _node_status(sim, sim.settings(node_access=access))
    unreachable = [f for f in report.findings if f.code == "NODE_UNREACHABLE"]
    assert unreachable, [f.code for f in report.findings]
    for finding in unreachable:
        assert first in finding.next_steps[0], finding.next_steps
        assert not any(not_shown in step for step in finding.next_steps), finding.next_steps


def test_a_node_read_failure_names_the_transport_and_the_switch(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["node-status", "--scenario", str(SCENARIO), "--node-access", "ssh"])
    out = capsys.readouterr().out
    assert code in (0, 3, 4)
    assert "gpu-refused: ssh refused" in out and "--node-access agent (setting node_access)" in out


def test_the_sim_banner_prints_the_command_line_that_works() -> None:
    async def banner() -> str:
        async with SimCluster(_scenario(agents=True)) as sim:
            return sim.describe()

    import asyncio

    text = asyncio.run(banner())
    assert "gpubot node-status --node-access auto" in text and "KUBECONFIG=" in text
