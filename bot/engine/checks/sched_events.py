"""Decode the newest FailedScheduling message into insufficient-resource, volume and qGPU findings.

Taints, selectors, cordons and node health are computed from the nodes by their own checks (the
message only counts nodes, and newer schedulers no longer name the taint), so their reasons are
skipped here. A reason no table knows is reported verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.checks._plugin import admitted_nodes
from bot.engine.facts import Facts, per_cluster
from bot.kube.gpu import nodes_that_may_offer
from bot.kube.resources import is_gpu_resource, pod_gpu_requests, quantity_or_none
from bot.kube.taints import has_taints, untolerated_taints


class PodCount(TypedDict):
    pod: str
    count: int


class PodMessage(TypedDict):
    pod: str
    message: str


class Insufficient(PodCount):
    resource: str


class InsufficientGpu(Insufficient):
    requested: str


SCHED_INSUFFICIENT_GPU = Code("SCHED_INSUFFICIENT_GPU", InsufficientGpu)
SCHED_INSUFFICIENT_OTHER = Code("SCHED_INSUFFICIENT_OTHER", Insufficient)
SCHED_QGPU_ALLOC_FAILED = Code("SCHED_QGPU_ALLOC_FAILED", PodCount)
SCHED_VOLUME = Code("SCHED_VOLUME", PodMessage)
SCHED_UNRECOGNISED = Code("SCHED_UNRECOGNISED", PodMessage)

#: categories another check computes from the nodes themselves
COMPUTED_ELSEWHERE = {"untolerated_taint", "node_selector", "unschedulable", "not_ready", "unknown_conditions",
                      "pod_affinity", "pod_anti_affinity", "existing_anti_affinity", "topology_spread",
                      "dra_claims"}


def allocatable(node: dict[str, Any], resource: str) -> Any:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    return None if raw is None else quantity_or_none(raw)


def _lacking(facts: Facts, pod: dict[str, Any], resource: str) -> int | None:
    """How many nodes offer none of ``resource`` yet pass the filters before the resource check.

    The scheduler reports those as ``Insufficient <resource>`` too. When that is exactly the
    count it gives, and some node does offer the resource, the message's shortage is only the
    nodes without the GPU: the nodes that have it failed for another reason (a taint, pod
    affinity), which another finding names, and "already handed out" would be wrong. None when
    no node offers the resource at all (GPU_RESOURCE_NOT_ADVERTISED covers that).
    """
    if not is_gpu_resource(resource):
        return None
    # the one allocatable value per node, not every GPU resource of every node, and only of the
    # nodes that may offer it (the kubelet lists a resource in allocatable as in capacity)
    nodes = facts.nodes
    offers = _offering(facts, resource)
    if not offers:
        return None
    # reaches_resource_fit, with the node-selection half worked out once per question (it is shared)
    # by set algebra: at 10,000 nodes a walk asking each node's taints was a fifth of the checks'
    # time; an untainted node (most of them) passes without asking what the pod tolerates
    lacking = set(admitted_nodes(facts, pod)) - offers
    return len(lacking) - sum(1 for n in lacking & _tainted(facts) if untolerated_taints(pod, nodes[n]))


@per_cluster("nodes")
def _offering(facts: Facts, resource: str) -> frozenset[str]:
    """The nodes whose allocatable has some of ``resource``."""
    nodes = facts.nodes
    return frozenset(n for n in nodes_that_may_offer(nodes, [resource]) if (allocatable(nodes[n], resource) or 0) > 0)


@per_cluster("nodes")
def _tainted(facts: Facts) -> frozenset[str]:
    """The nodes with a taint or a cordon."""
    return frozenset(n for n, node in facts.nodes.items() if has_taints(node))


def run(facts: Facts) -> Iterator[Detection]:
    """Insufficient GPU/other resources, volume waits, the qGPU allocation failure, unknown reasons."""
    pod = facts.pending_pod
    if pod is None or not facts.events.scheduling:
        return
    msg = facts.events.scheduling[0]
    ref, subject = pod_ref(pod), pod_subject(pod)
    asks = pod_gpu_requests(pod)
    unrecognised: list[str] = []
    qgpu_lines: list[str] = []
    for reason in msg.reasons:
        line = f"{reason.count} {reason.text}" if reason.count else reason.text
        if reason.category == "insufficient_gpu":
            resource = reason.resource or "GPU"
            if reason.count and reason.count == _lacking(facts, pod, resource):
                continue  # only nodes without the GPU: not a shortage (see _lacking)
            yield SCHED_INSUFFICIENT_GPU.detect(
                subject,
                {
                    "pod": ref,
                    "resource": resource,
                    "count": reason.count,
                    "requested": fmt_num(asks.get(resource, 0)),
                },
                evidence=[line, msg.raw[:1000]],
            )
        elif reason.category == "insufficient_other":
            yield SCHED_INSUFFICIENT_OTHER.detect(
                subject,
                {
                    "pod": ref,
                    "resource": reason.resource or "resource",
                    "count": reason.count,
                },
                evidence=[line],
            )
        elif reason.category == "too_many_pods":
            yield SCHED_INSUFFICIENT_OTHER.detect(
                subject,
                {
                    "pod": ref,
                    "resource": "pods",
                    "count": reason.count,
                },
                evidence=[line],
            )
        elif reason.category == "qgpu_alloc_failed" and reason.qgpu is not None:
            qgpu_lines += [line, "  " + reason.qgpu.describe()]
        elif reason.category == "volume":
            yield SCHED_VOLUME.detect(subject, {"pod": ref, "message": reason.text[:200]}, evidence=[line])
        elif reason.category == "unrecognised":
            unrecognised.append(line)
    if qgpu_lines:
        # One finding for all nodes: each histogram entry is a group of nodes with the same card state.
        count = sum(r.count for r in msg.reasons if r.category == "qgpu_alloc_failed")
        yield SCHED_QGPU_ALLOC_FAILED.detect(subject, {"pod": ref, "count": count}, evidence=qgpu_lines)
    if msg.prefilter and not msg.reasons:
        if msg.prefilter_category == "volume":
            yield SCHED_VOLUME.detect(
                subject,
                {
                    "pod": ref,
                    "message": msg.prefilter[:200],
                },
                evidence=[msg.raw[:1000]],
            )
        elif msg.prefilter_category not in ("not_ready", "topology_spread", "dra_claims"):
            unrecognised.append(msg.prefilter)
    if unrecognised:
        yield SCHED_UNRECOGNISED.detect(subject, {"pod": ref, "message": msg.raw[:300]}, evidence=[msg.raw[:2000]])


CHECK = Check(
    name="sched.events",
    reads=("pending_pod", "events"),
    # the "Insufficient" count is checked against the nodes without the GPU; unreadable nodes
    # leave the scheduler's message as it stands
    refines=("nodes",),
    emits=(SCHED_INSUFFICIENT_GPU, SCHED_INSUFFICIENT_OTHER, SCHED_QGPU_ALLOC_FAILED, SCHED_VOLUME,
           SCHED_UNRECOGNISED),
    run=run,
)
