"""The official client's API classes are imported only when a request needs the client itself
(``bot.probes.lazy_api``): where every request goes over the kept connection, no generated API
module is loaded (tests/unit/test_kube_import.py); where one cannot (here: a reader without it),
the same reads go through the client's own methods and answer the same."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.probes.lazy_api import LazyApi
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "zombie-checkpoint.yaml"


def test_a_method_is_named_as_the_clients_and_built_once() -> None:
    api = LazyApi(client.ApiClient(client.Configuration()), "CoreV1Api")
    method = api.list_node
    assert method.__name__ == "list_node" and repr(method) == "CoreV1Api.list_node"
    built = api.built()
    assert type(built).__name__ == "CoreV1Api" and api.built() is built


async def test_reads_through_the_clients_methods_answer_as_the_kept_connection_does(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        kept = KubeReader(new_api_client(sim.settings().clusters[0]))
        plain = KubeReader(new_api_client(sim.settings().clusters[0]))
        plain._gets = None  # as where a proxy or impersonation rules the kept connection out
        try:
            for reader in (kept, plain):
                reader.stats.by_call.clear()
            answers = [
                (await r.list_nodes(), await r.list_pods("", field_selector="spec.nodeName=tcs-10-29-25-5"),
                 await r.get_object("Node", "tcs-10-29-25-5"), await r.served("apps", "v1"))
                for r in (kept, plain)
            ]
        finally:
            kept.close()
            plain.close()
    assert answers[0] == answers[1] and answers[0][0]
    # the kept connection never built the client's API object; the plain reader had to
    assert kept._core._api is None and plain._core._api is not None
    assert kept.stats.by_call == plain.stats.by_call  # the same method names either way
