"""Node reads as the unprivileged agent gets them on a real node (docs/node-reads.md).

The agent's container sees no host systemd: its ``systemctl is-active kubelet`` answers no state
(the scenario's ``agent_systemd: false``). The kubelet's liveness then comes from its Lease in
kube-node-lease and the Ready condition, read through the simulator's API, and the report says so;
a stopped kubelet's stale heartbeat is "not heartbeating", never a systemd word it did not say.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bot.commands import parse_invocation
from bot.report import Report
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from tests import yaml_data

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "unreachable-node.yaml"


def _data(*, systemd: bool, not_ready: str = "") -> dict[str, Any]:
    data = yaml_data.load_file(SCENARIO)
    for facts in data["nodes"].values():
        facts["ssh"] = "ok"
        facts["agent"] = "ok"
        facts["agent_systemd"] = systemd
    for obj in data["kubernetes"]["objects"]:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == not_ready:
            obj["status"]["conditions"] = [
                {**copy.deepcopy(c), "status": "Unknown", "reason": "NodeStatusUnknown",
                 "message": "Kubelet stopped posting node status."}
                if c["type"] == "Ready" else c for c in obj["status"]["conditions"]
            ]
            data["nodes"][not_ready]["kubelet"] = "inactive"
    return data


async def _node_status(data: dict[str, Any]) -> tuple[Report, SimCluster]:
    async with SimCluster(scenario_from_dict(data, source="agent-no-systemd")) as sim:
        service = Service(sim.settings(node_access="agent", ssh_deadline_s=5.0))
        try:
            return await service.run(parse_invocation(["node-status"])), sim
        finally:
            await service.close()


def _lease_reads(sim: SimCluster) -> int:
    return sum(n for path, n in sim.api.stats.per_path.items() if path.startswith("/apis/coordination.k8s.io/v1/"
                                                                                   "namespaces/kube-node-lease/"))


async def test_without_host_systemd_the_kubelet_is_read_from_its_lease() -> None:
    report, sim = await _node_status(_data(systemd=False))
    rows = {r.node: r for r in report.nodes}
    assert {n: r.kubelet for n, r in rows.items()} == dict.fromkeys(rows, "active")
    for row in rows.values():
        assert any("kubelet heartbeating: Lease kube-node-lease/" in n and "Ready True" in n for n in row.notes)
    assert _lease_reads(sim) == len(rows)
    assert sim.api.writes == []


async def test_a_node_that_stopped_heartbeating_is_not_called_inactive() -> None:
    report, _ = await _node_status(_data(systemd=False, not_ready="gpu-ok-2"))
    row = next(r for r in report.nodes if r.node == "gpu-ok-2")
    assert row.kubelet == "not heartbeating"
    (finding,) = [f for f in report.findings if f.code == "NODE_NOT_READY" and "gpu-ok-2" in " ".join(f.evidence)]
    assert any("the kubelet's Lease: not heartbeating" in e for e in finding.evidence)
    assert not any(r.action == "kubelet.restart" for r in finding.remediations)


async def test_with_host_systemd_no_lease_is_read() -> None:
    report, sim = await _node_status(_data(systemd=True))
    assert {r.kubelet for r in report.nodes} == {"active"}
    assert _lease_reads(sim) == 0
    assert not any("Lease" in n for r in report.nodes for n in r.notes)
