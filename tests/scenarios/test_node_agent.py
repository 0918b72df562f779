"""node_access: agent end to end: the bot execs the node reads into each node's gpubot-node pod
through the simulator's Kubernetes API (real HTTP and exec WebSocket), and every bad path ends as
a finding or a skipped line within the deadline: no agent pod (not scheduled, Pending,
crash-looping), exec refused (403, by the agent's mode or by the API server), exec hanging (after
the upgrade, or an API server that never answers the upgrade), output cut before the exit status,
the agent pod gone since it was listed (404), the agent pods not listable at all; and through the
CLI, with no traceback and no wait past the deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.commands import parse_invocation
from bot.probes.node_agent import AGENT_SELECTOR
from bot.probes.ssh import READ_COMMANDS
from bot.report import Report
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from tests import yaml_data
from tests.exit_status import assert_answered

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "unreachable-node.yaml"
DEADLINE = 2.0
VIA = "exec into its gpubot-node agent"


def _data(agents: dict[str, str], faults: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """unreachable-node.yaml with every node reachable over SSH, the given agent modes and API faults."""
    data = yaml_data.load_file(SCENARIO)
    for name, facts in data["nodes"].items():
        facts["ssh"] = "ok"
        if name in agents:
            facts["agent"] = agents[name]
    data.setdefault("api", {})["faults"] = [dict(f) for f in faults]
    return data


def _scenario(agents: dict[str, str], faults: Sequence[dict[str, Any]] = ()) -> Any:
    return scenario_from_dict(_data(agents, faults), source="agent-modes")


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


async def test_the_long_running_bot_reads_a_node_that_timed_out_first_next_time() -> None:
    """With one read slot, a hanging agent read last costs its deadline after every other node;
    the long-running bot remembers it and starts it first the next time."""
    scenario = _scenario({"gpu-ok-2": "hang"})
    async with SimCluster(scenario) as sim:
        settings = sim.settings(node_access="agent", ssh_deadline_s=DEADLINE, ssh_concurrency=1)
        service = Service(settings, keep_connections=True)
        try:
            await service.run(parse_invocation(["node-status"]))
            first_run = [pod for _, pod in sim.api.exec_arrivals]
            await service.run(parse_invocation(["node-status"]))
            second_run = [pod for _, pod in sim.api.exec_arrivals[len(first_run) :]]
        finally:
            await service.close()
    assert first_run[0] != "gpubot-node-gpu-ok-2"
    assert second_run[0] == "gpubot-node-gpu-ok-2"
    assert sorted(set(second_run)) == sorted(set(first_run))


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
    data = yaml_data.load_file(SCENARIO)
    for facts in data["nodes"].values():
        facts["ssh"] = "ok"
    data["nodes"]["gpu-ok-2"]["agent"] = "missing"
    node = next(o for o in data["kubernetes"]["objects"] if o["kind"] == "Node" and o["metadata"]["name"] == "gpu-ok-2")
    node.setdefault("spec", {})["taints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    report, _, _ = await _node_status(scenario_from_dict(data, source="agent-taint"))
    finding = _by_code(report, "NODE_AGENT_MISSING")["gpu-ok-2"]
    assert "(not scheduled: taint dedicated=training:NoSchedule is not tolerated)" in finding.title


async def test_an_api_server_that_never_answers_the_exec_upgrade_costs_only_the_deadline() -> None:
    # the API server (or the kubelet behind it) holds the WebSocket handshake of one node's execs
    scenario = _scenario({}, [{"match": "/pods/gpubot-node-gpu-ok-2/exec", "delay_s": 30}])
    report, elapsed, _ = await _node_status(scenario)
    assert elapsed < DEADLINE + 4.0, f"took {elapsed:.1f}s with a {DEADLINE}s per-node deadline"
    unreachable = _by_code(report, "NODE_UNREACHABLE")
    assert sorted(unreachable) == ["gpu-ok-2"]
    assert unreachable["gpu-ok-2"].title.startswith(f"Cannot reach node gpu-ok-2 over {VIA} (timeout)")
    assert {r.node for r in report.nodes if r.gpus} >= {"gpu-ok-1", "gpu-refused", "gpu-rekeyed"}


async def test_an_exec_the_api_server_refuses_or_whose_pod_is_gone_is_a_finding() -> None:
    scenario = _scenario(
        {},
        [
            {"match": "/pods/gpubot-node-gpu-ok-2/exec", "status": 403},  # RBAC: no pods/exec in the namespace
            {"match": "/pods/gpubot-node-gpu-refused/exec", "status": 404},  # the pod was replaced since the list
        ],
    )
    report, elapsed, _ = await _node_status(scenario)
    assert elapsed < DEADLINE + 4.0
    unreachable = _by_code(report, "NODE_UNREACHABLE")
    assert sorted(unreachable) == ["gpu-ok-2", "gpu-refused"]
    assert unreachable["gpu-ok-2"].title.startswith(f"Cannot reach node gpu-ok-2 over {VIA} (auth)")
    assert "exec refused (403)" in unreachable["gpu-ok-2"].evidence[0]
    assert "not found" in unreachable["gpu-refused"].evidence[0]
    assert {s.what for s in report.skipped} == {"physical checks on gpu-ok-2", "physical checks on gpu-refused"}


async def test_agent_pods_that_cannot_be_listed_are_a_skipped_line_per_node() -> None:
    scenario = _scenario({}, [{"match": "/api/v1/namespaces/gpubot/pods", "verb": "GET", "status": 403}])
    report, elapsed, sim = await _node_status(scenario)
    assert elapsed < DEADLINE + 4.0
    nodes = sorted(scenario.nodes)
    skipped = {s.what: s.why for s in report.skipped}
    assert {f"physical checks on {n}": "agent error" for n in nodes}.items() <= skipped.items()
    codes = [f.code for f in report.findings]
    assert "NODE_AGENT_MISSING" not in codes and "NODE_UNREACHABLE" not in codes
    assert sim.api.exec_log == []  # no agent known: nothing exec'd


def test_the_cli_reports_every_bad_agent_without_a_traceback_or_a_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad-agents.yaml"
    modes = {"gpu-ok-2": "hang", "gpu-refused": "truncated", "gpu-rekeyed": "forbidden"}
    path.write_text(yaml.safe_dump(_data(modes)))
    started = time.monotonic()
    code = main(["node-status", "--scenario", str(path), "--node-access", "agent", "--json"])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    # the hanging node costs the default per-node deadline (10 s), and the CLI exits right after
    assert elapsed < 10.0 + 8.0, f"took {elapsed:.1f}s"
    report = json.loads(out)
    assert_answered(code, report)
    skipped = {s["what"] for s in report["skipped"]}
    assert skipped == {f"physical checks on {n}" for n in modes}
