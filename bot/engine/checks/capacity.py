"""Capacity per candidate node and pods stuck Terminating that still hold GPU resources."""

from __future__ import annotations

from bot.engine.checks.common import candidate_nodes, fmt_num, gpu_asks, is_unscheduled, pod_ref, target_pod
from bot.engine.context import Context
from bot.engine.logic.resources import node_gpu_capacity
from bot.probes.slim import SlimPod
from bot.registry import check
from bot.report import Remediation


def requested_on(pods: list[SlimPod], resource: str) -> float:
    return sum(p.gpu.get(resource, 0) for p in pods if p.live)


@check("capacity.gpu", needs=("kube.target", "kube.nodes", "kube.node_pods"))
def capacity(ctx: Context) -> None:
    """Live pods' requests fill the allocatable GPU resources on every candidate node."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    asks = gpu_asks(pod)
    if not asks:
        return
    by_node = ctx.fact("kube.node_pods") or {}
    rows = []
    short: set[str] = set()
    fits_somewhere = False
    for name, node in sorted(candidate_nodes(ctx, pod).items()):
        caps = node_gpu_capacity(node)
        node_fits = True
        for resource, want in asks.items():
            _, allocatable = caps.get(resource, (0.0, 0.0))
            used = requested_on(by_node.get(name, []), resource)
            free = allocatable - used
            rows.append(
                f"{name}: {resource} allocatable {fmt_num(allocatable)}, requested {fmt_num(used)}, "
                f"free {fmt_num(free)}, pod asks {fmt_num(want)}"
            )
            if free < want:
                short.add(resource)
            node_fits = node_fits and free >= want
        fits_somewhere = fits_somewhere or node_fits
    if rows and not fits_somewhere:
        ctx.emit(
            "CAPACITY_EXHAUSTED",
            pod=pod_ref(pod),
            resource=", ".join(sorted(short)),
            evidence=rows[:40],
            rank=25,
        )


@check("terminating.holders", needs=("kube.nodes", "kube.node_pods"))
def terminating(ctx: Context) -> None:
    """Pods with a deletionTimestamp that still request GPU resources on the nodes in scope."""
    by_node: dict[str, list[SlimPod]] = ctx.fact("kube.node_pods") or {}
    holders = [p for pods in by_node.values() for p in pods if p.terminating and p.gpu and p.live]
    if not holders:
        return
    pod = target_pod(ctx)
    is_cause = pod is not None and is_unscheduled(pod)
    for node in sorted({p.node for p in holders}):
        mine = [p for p in holders if p.node == node]
        ctx.emit(
            "TERMINATING_HOLDS_GPU",
            node=node,
            count=len(mine),
            pod=", ".join(p.ref for p in mine[:5]),
            evidence=[
                f"{p.ref} Terminating since {p.deletion_timestamp}, holds "
                + ", ".join(f"{k}={fmt_num(v)}" for k, v in sorted(p.gpu.items()))
                for p in mine[:20]
            ],
            remediations=[
                Remediation(
                    "pod.delete",
                    {"namespace": p.namespace, "pod": p.name},
                    f"Delete {p.ref} again gracefully (30 s, never --force)",
                )
                for p in mine[:3]
            ],
            rank=16 if is_cause else 40,
            severity="critical" if is_cause else None,
        )
