"""The simulator honours impersonation: ``Impersonate-User``/``-Group`` against the scenario's RBAC.

The official client, built by ``new_api_client`` with an identity, sends one ``Impersonate-Group``
header per group; the simulator records what arrived and answers a forbidden read with the 403 a
real API server gives, while the bot's own (unimpersonated) requests read everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import KubeApiError
from bot.identity import Identity
from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.sim.cluster import SimCluster
from bot.sim.rbac import load_rbac

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "per-user-rbac.yaml"
ALICE = Identity("alice", ("ml-team", "all-staff"))


async def test_impersonated_reads_follow_the_rbac_table(tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIO, workdir=tmp_path) as sim:
        cluster = sim.settings().clusters[0]
        as_alice = KubeReader(new_api_client(cluster, identity=ALICE))
        as_bot = KubeReader(new_api_client(cluster))
        try:
            pods = await as_alice.list_pods("ai")
            assert "gpu-full-5d8c6-q7wz2" in [p["metadata"]["name"] for p in pods]
            with pytest.raises(KubeApiError) as denied:
                await as_alice.list_nodes()
            assert denied.value.status == 403
            assert 'nodes is forbidden: User "alice" cannot list resource "nodes"' in denied.value.user_message
            with pytest.raises(KubeApiError) as other_ns:
                await as_alice.list_pods("qgpu")
            assert other_ns.value.status == 403 and 'in the namespace "qgpu"' in other_ns.value.user_message
            assert len(await as_bot.list_nodes()) == 2  # the bot itself is not impersonating
        finally:
            as_alice.close()
            as_bot.close()
        # both groups arrived, each as its own header; the bot's own requests were not recorded
        assert ("alice", ("ml-team", "all-staff"), "list", "pods") in sim.api.impersonated
        assert ("alice", ("ml-team", "all-staff"), "list", "nodes") in sim.api.impersonated
        assert {entry[0] for entry in sim.api.impersonated} == {"alice"}


def test_rbac_rules_match_subjects_verbs_resources_and_namespaces() -> None:
    problems: list[tuple[str, str]] = []
    table = load_rbac(
        [
            {"subjects": ["group:ml"], "verbs": ["get", "list"], "resources": ["pods"], "namespaces": ["ai"]},
            {"subjects": ["user:root"], "verbs": ["*"], "resources": ["*"]},
        ],
        lambda where, what: problems.append((where, what)),
    )
    assert table is not None and problems == []
    assert table.allows("x", ["ml"], "list", "pods", "ai")
    assert not table.allows("x", ["ml"], "list", "pods", "kube-system")
    assert not table.allows("x", ["ml"], "list", "pods", None)  # cluster-wide needs a rule without namespaces
    assert not table.allows("x", ["ml"], "watch", "pods", "ai")
    assert not table.allows("ml", [], "list", "pods", "ai")  # a user is not a group of the same name
    assert table.allows("root", [], "create", "pods/exec", "ai")
    bad = [{"subjects": ["ml"], "verbs": ["get"], "resources": ["pods"]}, "x"]
    load_rbac(bad, lambda where, what: problems.append((where, what)))
    assert [w for w, _ in problems] == ["rbac[0]", "rbac[1]"]
