"""No node the pod may use advertises the GPU resource it asks for.

"Insufficient nvidia.com/gpu" reads like "all cards are taken", but when allocatable is 0
everywhere nothing was ever handed out: the device plugin (or the operator stack under it) never
registered the cards, or registered them under another name (MIG, ``.shared`` time-slicing).
Sending the user to hunt for a leak is then exactly wrong, so this finding leads and the
generic scheduler echo is dropped (``unless:`` in the catalogue).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import DERIVED, Facts, per_cluster
from bot.kube.gpu import advertised_gpu_resources, gpu_labels
from bot.kube.objects import name_of
from bot.kube.resources import node_gpu_capacity, pod_node_gpu_requests


class GpuResourceNotAdvertised(TypedDict):
    pod: str
    resource: str
    nodes: str
    count: int
    value: str


GPU_RESOURCE_NOT_ADVERTISED = Code("GPU_RESOURCE_NOT_ADVERTISED", GpuResourceNotAdvertised)


def _node_line(facts: Facts, name: str) -> str:
    node = facts.nodes[name]
    advertised = advertised_gpu_resources(node)
    allocatable = {r: a for r, (_, a) in node_gpu_capacity(node).items()}
    offers = ", ".join(
        f"{r} capacity {advertised[r]}, allocatable {allocatable.get(r, 0):g}" for r in sorted(advertised)
    )
    why = []
    labels = gpu_labels(node)
    if labels:
        why.append("labels " + ", ".join(labels[:3]))
    plugins = [
        name_of(p)
        for p in facts.components.pods
        if (p.get("spec") or {}).get("nodeName") == name
    ]
    if plugins:
        why.append("runs " + ", ".join(plugins[:3]))
    return f"{name} ({'; '.join(why) or 'GPU node'}): advertises {offers or 'no GPU resource'}"


@per_cluster(*DERIVED["gpu_nodes"])
def _advertised(facts: Facts, resource: str) -> float:
    """How much of ``resource`` the GPU nodes have allocatable, together (a node that offers a GPU
    resource advertises it, so it is a GPU node: the rest need no look)."""
    return sum(node_gpu_capacity(facts.nodes[n]).get(resource, (0.0, 0.0))[1] for n in facts.gpu_nodes)


def run(facts: Facts) -> Iterator[Detection]:
    """GPU_RESOURCE_NOT_ADVERTISED naming every requested resource with zero allocatable on every node.

    One finding for all of them: a pair such as vcuda-core/vcuda-memory (or qgpu-core/qgpu-memory)
    goes missing together, when the one plugin that offers both does not run.
    """
    pod = facts.pending_pod
    if pod is None:
        return
    # HAMi's gpumem/gpucores are never advertised by design (VGPU_SCHEDULER_BYPASSED covers a
    # scheduler that expects them on nodes), so only node-advertised resources are judged here.
    missing = {}
    for resource, want in sorted(pod_node_gpu_requests(pod).items()):
        if _advertised(facts, resource) <= 0:
            missing[resource] = want
    if not missing:
        return
    evidence = [f"{pod_ref(pod)} asks {resource}: {want:g}; allocatable on all {len(facts.nodes)} node(s): 0"
                for resource, want in missing.items()]
    evidence += [_node_line(facts, n) for n in facts.gpu_nodes[:20]]
    if not facts.gpu_nodes:
        evidence.append("no node looks like a GPU node (no GPU resource, GPU label or GPU device-plugin pod)")
    for msg in facts.events.scheduling[:1]:
        evidence.append(f"scheduler: {msg.raw[:500]}")
    others = sorted({r for n in facts.gpu_nodes for r in advertised_gpu_resources(facts.nodes[n])} - set(missing))
    yield GPU_RESOURCE_NOT_ADVERTISED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "resource": ", ".join(missing),
            "nodes": ", ".join(facts.gpu_nodes[:10]) or "none",
            "count": len(facts.gpu_nodes),
            "value": ", ".join(others) or "nothing",
        },
        evidence=evidence,
    )


CHECK = Check(
    name="sched.not_advertised",
    reads=("pending_pod", "nodes", "gpu_nodes", "components", "events"),
    emits=(GPU_RESOURCE_NOT_ADVERTISED,),
    run=run,
)
