"""The official client's API classes are imported only when a request needs the client itself
(``bot.probes.lazy_api``): where every request goes over the kept connection, no generated API
module is loaded; where one cannot (here: a reader without it), the same reads go through the
client's own methods and answer the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.probes.lazy_api import LazyApi
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "zombie-checkpoint.yaml"


def test_building_the_clients_loads_no_api_module(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n",
        encoding="utf-8",
    )
    script = (
        "import json, sys\n"
        "from bot.probes.clients import KubeClients\n"
        "from bot.settings import ClusterConfig, load_settings\n"
        f"s = load_settings(env={{}}, clusters=(ClusterConfig(name='c', kubeconfig={str(kubeconfig)!r}),))\n"
        "clients = KubeClients(s).for_cluster('')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kubernetes.client.api.'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == []


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
