"""The pods on a few GPU nodes are read with one field-selected list per node
(``bot.probes.views.DerivedViews.slim_pods_by_node``): when those reads fail, the report names
every one of them, not only the first, and concludes nothing from the pods it could not read."""

from __future__ import annotations

from pathlib import Path

from bot.commands import parse_invocation
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "zombie-checkpoint.yaml"
NODES = ("tcs-10-29-25-5", "tcs-10-29-25-6")


async def test_every_failed_read_of_a_nodes_pods_is_named(tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIO, workdir=tmp_path) as sim:
        sim.api.faults.add(ApiFault(match="spec.nodeName", verb="GET", status=403))
        service = Service(sim.settings())
        try:
            report = (await service.run(parse_invocation(["node-status"]))).to_dict()
        finally:
            await service.close()
    assert report["complete"] is False
    named = [u["read"] for u in report["unreadable"] if u["error"] == "forbidden"]
    for node in NODES:
        assert [r for r in named if f"spec.nodeName={node}" in r], (node, report["unreadable"])
    assert "CHECKPOINT_ZOMBIE" not in [f["code"] for f in report["findings"]]  # it rests on the pods
