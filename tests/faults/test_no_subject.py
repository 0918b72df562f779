"""A question about a pod or workload the API does not have is answered as soon as that is known:
the reads still going (every node, the GPU components) are cancelled as not needed, not waited for
and not reported as unread (``Facts.no_subject``). A read of the target that failed is no such
answer (tests/faults/test_read_failures.py: nothing is concluded from it)."""

from __future__ import annotations

from pathlib import Path

from bot.commands import parse_invocation
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "zombie-checkpoint.yaml"


async def test_a_mistyped_pod_is_answered_without_the_node_list_it_does_not_need(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        sim.api.faults.add(ApiFault(match="/api/v1/nodes", verb="GET", hang=True))  # a large, slow list
        service = Service(sim.settings(command_deadline_s=3.0))
        try:
            report = await service.run(parse_invocation(["why-pending", "gpu-full-5d8c6-q7wzz", "-n", "ai"]))
        finally:
            await service.close()
        asked_nodes = any("/api/v1/nodes" in fired[1] for fired in sim.api.faults.fired)
    assert [f.code for f in report.findings] == ["POD_NOT_FOUND"]
    assert any("gpu-full-5d8c6-q7wz2" in line for line in report.findings[0].evidence)  # close names read
    # the hung node list was asked for (the loaders start together) and cancelled, not waited out:
    # waited out, it would be a timeout in the report and the answer incomplete
    assert asked_nodes
    assert report.unreadable == [] and report.skipped == []


async def test_a_missing_namespace_is_said_as_such_and_nothing_else_is_read(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(["why-pending", "gpu-full-5d8c6-q7wz2", "-n", "no-such-ns"]))
        finally:
            await service.close()
    (finding,) = report.findings
    assert finding.code == "POD_NOT_FOUND" and "namespace no-such-ns" in finding.title
    assert report.unreadable == [] and report.skipped == []
