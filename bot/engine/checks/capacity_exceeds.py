"""A pod that asks for more of a GPU resource than any node it may use has, even when empty.

The scheduler's words are the same as for a full cluster (``Insufficient nvidia.com/gpu``), so
"wait for a job to finish" is the natural reading, and it is wrong: 4 GPUs in one pod never fit
on nodes of 2, however long it waits. The nodes it may use are those its nodeSelector and
required node affinity admit (all nodes when none does: that mismatch is its own finding), and of
those the ones whose taints it tolerates when there are any. A node's capacity is what it can
ever offer; allocatable is shown beside it (cards withdrawn as unhealthy are another finding).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.checks._plugin import admitted_nodes, blocking_taints
from bot.engine.facts import Facts, per_cluster
from bot.kube.gpu import nodes_that_may_offer
from bot.kube.resources import container_gpu_resources, node_gpu_capacity, pod_node_gpu_requests, quantity_or_none


class RequestExceedsNode(TypedDict):
    pod: str
    resource: str
    requested: str
    node: str
    value: str
    count: int


REQUEST_EXCEEDS_NODE = Code("REQUEST_EXCEEDS_NODE", RequestExceedsNode)

Obj = dict[str, Any]


def usable_nodes(facts: Facts, pod: Obj, among: Set[str]) -> list[str]:
    """Nodes the pod's node selection admits (all when none does), narrowed to the tolerated ones
    when it tolerates any; only those ``among`` (the nodes that matter) are returned, sorted, so
    the taints of the thousands of other nodes are not read one by one."""
    selected = admitted_nodes(facts, pod) or list(facts.nodes)
    tolerates_some = any(not blocking_taints(pod, facts.nodes[n]) for n in selected)
    return sorted(
        n for n in selected if n in among and not (tolerates_some and blocking_taints(pod, facts.nodes[n]))
    )


def _offer_some(node: Obj, resource: str) -> bool:
    """The node's capacity has some of ``resource`` (what ``node_gpu_capacity`` would say)."""
    return (quantity_or_none(((node.get("status") or {}).get("capacity") or {}).get(resource, 0)) or 0) > 0


@per_cluster("nodes")
def _having(facts: Facts, resource: str) -> frozenset[str]:
    """The nodes whose capacity has some of ``resource``."""
    return frozenset(n for n in nodes_that_may_offer(facts.nodes, [resource]) if _offer_some(facts.nodes[n], resource))


def _per_container(pod: Mapping[str, Any], resource: str) -> str:
    parts = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        amount = container_gpu_resources(c).get(resource)
        if amount:
            parts.append(f"{c.get('name')}: {fmt_num(amount)}")
    return ", ".join(parts)


def run(facts: Facts) -> Iterator[Detection]:
    """REQUEST_EXCEEDS_NODE per GPU resource the pod asks more of than its largest usable node has."""
    pod = facts.pending_pod
    if pod is None:
        return
    asks = pod_node_gpu_requests(pod)
    if not asks:
        return
    for resource, want in sorted(asks.items()):
        having = _having(facts, resource)
        nodes = usable_nodes(facts, pod, among=having) if having else []
        offering = {n: node_gpu_capacity(facts.nodes[n])[resource] for n in nodes}
        if not offering:
            continue  # nobody offers it at all: GPU_RESOURCE_NOT_ADVERTISED's case
        largest = max(sorted(offering), key=lambda n: offering[n][0])
        capacity, allocatable = offering[largest]
        if want <= capacity:
            continue
        split = _per_container(pod, resource)
        evidence = [
            f"{pod_ref(pod)} asks {resource}: {fmt_num(want)}" + (f" (containers {split})" if split else ""),
            f"largest node it may use: {largest} with {resource} capacity {fmt_num(capacity)}, "
            f"allocatable {fmt_num(allocatable)}",
            f"{len(offering)} node(s) it may use offer {resource}: "
            + ", ".join(f"{n}={fmt_num(v[0])}" for n, v in sorted(offering.items())[:10])
            + (f" and {len(offering) - 10} more" if len(offering) > 10 else ""),
        ]
        yield REQUEST_EXCEEDS_NODE.detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "resource": resource,
                "requested": fmt_num(want),
                "node": largest,
                "value": fmt_num(capacity),
                "count": len(offering),
            },
            evidence=evidence,
        )


CHECK = Check(name="capacity.exceeds", reads=("pending_pod", "nodes"), emits=(REQUEST_EXCEEDS_NODE,), run=run)
