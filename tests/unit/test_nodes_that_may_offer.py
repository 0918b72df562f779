"""A question walks only the GPU-marked nodes of the watch cache's NodeMap to find those offering
what a pod asks (bot.kube.gpu.nodes_that_may_offer), and answers exactly as over a plain map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.commands import parse_invocation
from bot.engine.facts import Facts
from bot.kube.gpu import (
    GPU_LABEL_KEYS,
    GPU_LABEL_VALUES,
    advertised_gpu_resources,
    gpu_labels,
    marks_gpu,
    nodes_that_may_offer,
)
from bot.kube.node_map import NodeMap
from bot.service import Service
from bot.sim.cluster import SimCluster
from tests import facts as f

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]


def cluster() -> dict[str, Obj]:
    """CPU nodes around GPU nodes of three kinds, one cordoned, one tainted, one labelled GPU
    without advertising any (its plugin never registered)."""
    nodes = [f.node(f"cpu-{i}", gpu=None) for i in range(6)]
    nodes += [f.node("gpu-a", gpu=4), f.node("gpu-b", gpu=8, unschedulable=True),
              f.node("gpu-c", gpu=8, taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]),
              f.node("mig-a", gpu=7, resource="nvidia.com/mig-1g.10gb"),
              f.node("amd-a", gpu=2, resource="amd.com/gpu"),
              f.node("gpu-zero", gpu=0),
              f.node("labelled", gpu=None, labels={"nvidia.com/gpu.present": "true"})]
    return {n["metadata"]["name"]: n for n in nodes}


def marked(nodes: dict[str, Obj]) -> NodeMap:
    return NodeMap(nodes, [n for n, o in nodes.items() if marks_gpu(o)], marks_gpu)


def test_a_node_map_gives_its_gpu_marks_in_order_and_anything_else_every_node() -> None:
    nodes = cluster()
    names = list(nodes_that_may_offer(marked(nodes), ["nvidia.com/gpu"]))
    assert names == sorted(n for n in nodes if not n.startswith("cpu-"))
    assert list(nodes_that_may_offer(nodes, ["nvidia.com/gpu"])) == list(nodes)  # a plain map
    assert list(nodes_that_may_offer(marked(nodes), [])) == list(nodes)  # asks nothing: every node
    assert list(nodes_that_may_offer(marked(nodes), ["cpu"])) == list(nodes)  # not a GPU resource
    other = NodeMap(nodes, ["cpu-0"], lambda node: False)  # marks of another rule are not GPU marks
    assert list(nodes_that_may_offer(other, ["nvidia.com/gpu"])) == list(nodes)


def _with_nodes(facts: Facts, nodes: dict[str, Obj]) -> Facts:
    facts.put("nodes", nodes)
    return facts


@pytest.mark.parametrize(
    ("resource", "gpu", "message"),
    [
        ("nvidia.com/gpu", 16,
         "0/13 nodes are available: 6 Insufficient nvidia.com/gpu, 7 node(s) had untolerated taint."),
        ("nvidia.com/gpu", 2, "0/13 nodes are available: 9 Insufficient nvidia.com/gpu."),
        ("nvidia.com/mig-1g.10gb", 9, "0/13 nodes are available: 12 Insufficient nvidia.com/mig-1g.10gb."),
        ("amd.com/gpu", 1, "0/13 nodes are available: 12 Insufficient amd.com/gpu."),
    ],
)
def test_checks_answer_the_same_over_a_node_map_and_a_plain_map(resource: str, gpu: int, message: str) -> None:
    nodes = cluster()
    target = f.pod("p", gpu=gpu, resource=resource)
    answers = []
    for view in (dict(nodes), marked(nodes)):
        built = _with_nodes(f.facts(pod=target, events=[f.event(message)]), view)
        found = []
        for name in ("capacity.exceeds", "sched.events", "plugin.daemonset", "capacity.gpu"):
            found += [(d.code, d.subject, sorted(d.params.items()), d.evidence) for d in f.check(name).run(built)]
        answers.append((sorted(built.candidates), found, built.events.aged))
    assert answers[0] == answers[1]
    assert answers[0][0] == sorted(n for n, o in nodes.items() if resource in o["status"]["capacity"])


async def test_the_api_readers_plain_map_is_marked_once_for_the_whole_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold question (no watch cache) gets the same GPU-marked NodeMap the cache hands out, so
    every later walk (the candidates, the GPU nodes; each diagnosis of a ``pending``) takes the
    marks instead of every node."""
    made: list[Facts] = []
    real_init = Facts.__init__

    def init(self: Facts, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Facts, "__init__", init)
    async with SimCluster.from_file(ROOT / "scenarios" / "zombie-checkpoint.yaml", workdir=tmp_path) as sim:
        service = Service(sim.settings())
        try:
            await service.run(parse_invocation(["node-status"]))
        finally:
            await service.close()
    nodes = made[-1].nodes
    assert isinstance(nodes, NodeMap) and nodes.mark is marks_gpu
    assert nodes.marked == {name for name, node in nodes.items() if marks_gpu(node)} and nodes.marked
    assert made[-1].gpu_nodes == sorted(nodes.marked | made[-1].components.nodes_running_components())


_PLAIN_LABELS = {"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "z1", "team": "gpu"}
_LABEL_KEYS = [*GPU_LABEL_KEYS, *GPU_LABEL_VALUES, "feature.node.kubernetes.io/pci-0302_10de.present",
               "feature.node.kubernetes.io/pci-0300_1002.present", *_PLAIN_LABELS]
_LABEL_VALUES = ["true", "True", "enable", "on", "false", "", "linux", "Tesla-T4"]
_RESOURCES = ["cpu", "memory", "pods", "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "amd.com/gpu",
              "tke.cloud.tencent.com/qgpu-core", "example.com/fpga", "hugepages-2Mi"]


def _marks_as_written_out(node: Obj) -> bool:
    return bool(advertised_gpu_resources(node) or gpu_labels(node))


@given(
    labels=st.dictionaries(st.sampled_from(_LABEL_KEYS), st.sampled_from(_LABEL_VALUES), max_size=6),
    capacity=st.dictionaries(st.sampled_from(_RESOURCES), st.sampled_from(["0", "1", "8"]), max_size=4),
)
def test_marks_gpu_is_a_gpu_resource_or_a_gpu_label_whatever_the_node_carries(
    labels: dict[str, str], capacity: dict[str, str]
) -> None:
    """The quick answer every cold question asks of every node says what the two full readings say."""
    node = {"metadata": {"name": "n", "labels": labels}, "status": {"capacity": capacity}}
    assert marks_gpu(node) is _marks_as_written_out(node)


@pytest.mark.parametrize("key", [*_LABEL_KEYS])
@pytest.mark.parametrize("value", ["true", "enable", "on", "linux"])
def test_each_gpu_label_alone_among_plain_ones_marks_as_it_reads(key: str, value: str) -> None:
    node = {"metadata": {"name": "n", "labels": {**_PLAIN_LABELS, key: value}},
            "status": {"capacity": {"cpu": "8", "memory": "64Gi", "pods": "110"}}}
    assert marks_gpu(node) is _marks_as_written_out(node)
