"""Which reads a cold diagnosis makes for the pods on its candidate nodes (``KubeReader.slim_pods``).

A field-selected list per node costs us about as much as decoding five realistic pods, so the
reader lists node by node until the nodes hold most of the cluster's pods: a cluster whose GPU
nodes are a fifth of its nodes (200 nodes / 40 GPU nodes, the benchmark's small size) must not
decode every pod of the cluster to find theirs. The answer is the same either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from kubernetes import config

from bot.probes.kube import KubeReader
from bot.probes.slim import SlimPod
from bot.sim.generate import generate_scenario
from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import scenario_from_dict
from bot.sim.threaded import LoopThread


@pytest.fixture
async def reader(tmp_path: Path) -> AsyncIterator[KubeReader]:
    loop = LoopThread("slim-pods-sim")
    server = KubeApiServer(scenario_from_dict(generate_scenario(nodes=40, gpu_nodes=8, pods=400, seed=5)))
    loop.call(server.start())
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    r = KubeReader(config.new_client_from_config(config_file=str(kubeconfig)))
    yield r
    r.close()
    loop.call(server.stop())
    loop.close()


def _names(pods: Sequence[SlimPod]) -> list[tuple[str, str, str]]:
    return sorted((p.namespace, p.name, p.node) for p in pods)


async def test_a_fifth_of_the_nodes_is_read_node_by_node(reader: KubeReader) -> None:
    nodes = await reader.list_nodes()
    gpu = {n["metadata"]["name"] for n in nodes if n["metadata"]["name"].startswith("gpu-")}
    assert len(gpu) == 8 and len(nodes) == 40
    before = reader.stats.requests
    picked = await reader.slim_pods(nodes=gpu, all_nodes=len(nodes))
    assert reader.stats.requests - before == len(gpu)  # one field-selected list per node, no walk
    everything = await reader.slim_pods()
    assert _names(picked) == _names([p for p in everything if p.node in gpu]) and picked
