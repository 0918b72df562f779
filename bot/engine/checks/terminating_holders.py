"""Pods with a deletionTimestamp that still hold GPU resources on the nodes in scope.

Beside a pending pod, the holders are its cause only where their release would make room for
it on a node it may use: one card held on a node where the pod needs eight is true, and worth
saying, but it is not why the pod waits; nor are eight cards held on a node the pod's selector
excludes, whose taint it does not tolerate, or that is cordoned (a drain is the usual reason a
node has Terminating pods) or NotReady.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypedDict

from bot.engine.check import ASIDE, Check, Code, Detection, node_subject
from bot.engine.checks._common import PodItem, fmt_num
from bot.engine.checks._plugin import may_land
from bot.engine.facts import Facts
from bot.kube.objects import Obj
from bot.kube.resources import node_gpu_capacity, pod_node_gpu_requests


class TerminatingHoldsGpu(TypedDict):
    node: str
    count: int
    pod: str
    holders: list[PodItem]


TERMINATING_HOLDS_GPU = Code("TERMINATING_HOLDS_GPU", TerminatingHoldsGpu)


def _room_once_gone(facts: Facts, pod: Obj, node: str, need: Mapping[str, float]) -> bool:
    """Whether the node would have the asked pod's GPU request free once its Terminating pods are
    gone: the pod may land there, and allocatable, less what the pods that stay ask for, covers
    every resource it asks."""
    obj = facts.nodes.get(node)
    if obj is None or not need or not may_land(facts, pod, node):
        return False
    capacity = node_gpu_capacity(obj)
    staying = [p for p in facts.node_pods.get(node, []) if p.live and not p.terminating]
    for resource, amount in need.items():
        if resource not in capacity:
            return False
        if capacity[resource][1] - sum(p.gpu.get(resource, 0.0) for p in staying) < amount:
            return False
    return True


def _role(facts: Facts, pod: Obj | None, node: str, need: Mapping[str, float] | None) -> str:
    """``cause`` where the holders stand between the asked pod and this node, ``ASIDE`` where the
    pod would not land or fit there even without them; no role when no pod is waiting."""
    if pod is None or need is None:
        return ""
    return "cause" if _room_once_gone(facts, pod, node, need) else ASIDE


def run(facts: Facts) -> Iterator[Detection]:
    """TERMINATING_HOLDS_GPU per node; role ``cause`` when the asked pod waits for a GPU that
    the holders' release would give it on that node."""
    holders = [p for pods in facts.node_pods.values() for p in pods if p.terminating and p.gpu and p.live]
    pending = facts.pending_pod
    need = pod_node_gpu_requests(pending) if pending is not None else None
    for node in sorted({p.node for p in holders}):
        mine = [p for p in holders if p.node == node]
        role = _role(facts, pending, node, need)
        yield TERMINATING_HOLDS_GPU.detect(
            node_subject(node),
            {
                "node": node,
                "count": len(mine),
                "pod": ", ".join(p.ref for p in mine[:5]),
                "holders": [{"namespace": p.namespace, "name": p.name, "ref": p.ref} for p in mine[:3]],
            },
            role=role,
            evidence=[
                f"{p.ref} Terminating since {p.deletion_timestamp}, holds "
                + ", ".join(f"{k}={fmt_num(v)}" for k, v in sorted(p.gpu.items()))
                for p in mine[:20]
            ],
        )


CHECK = Check(
    name="terminating.holders",
    reads=("pending_pod", "node_pods", "nodes"),
    emits=(TERMINATING_HOLDS_GPU,),
    run=run,
)
