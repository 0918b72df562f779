"""Checks on the pod spec itself: GPU requests that can never work as written."""

from __future__ import annotations

from bot.engine.checks.common import QGPU_CORE, candidate_nodes, gpu_asks, is_unscheduled, pod_ref, target_pod
from bot.engine.context import Context
from bot.engine.logic.scheduling import parse_event_messages
from bot.registry import check

_RANKS = {"SPEC_MIXED_GPU_RESOURCES": 8, "SPEC_QGPU_INVALID": 9, "SPEC_ZERO_CPU_MEMORY": 40}


@check("spec.resources", needs=("kube.target",))
def resources(ctx: Context) -> None:
    """Mixed nvidia.com/gpu + qGPU, cpu/memory of '0', qGPU values qGPU rejects."""
    from bot.engine.logic.resources import spec_problems

    pod = target_pod(ctx)
    if pod is None:
        return
    for problem in spec_problems(pod):
        ctx.emit(
            problem.code,
            pod=pod_ref(pod),
            container=problem.container,
            what=problem.detail,
            evidence=[f"container {problem.container}: {problem.detail}"],
            rank=_RANKS.get(problem.code, 30),
        )


@check("spec.whole_card_shared", needs=("kube.target", "kube.nodes", "kube.node_pods", "kube.events"))
def whole_card_shared(ctx: Context) -> None:
    """A whole-card qGPU request while every candidate node's cards already carry shared slices."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    core = gpu_asks(pod).get(QGPU_CORE, 0)
    if core < 100:
        return
    by_node = ctx.fact("kube.node_pods") or {}
    candidates = candidate_nodes(ctx, pod)
    if not candidates:
        return
    evidence = []
    for name in sorted(candidates):
        shared = [p for p in by_node.get(name, []) if p.live and 0 < p.gpu.get(QGPU_CORE, 0) < 100]
        if not shared:
            return
        used = sum(p.gpu.get(QGPU_CORE, 0) for p in shared)
        evidence.append(
            f"{name}: {len(shared)} shared qGPU pod(s) using {used:g} core: "
            + ", ".join(p.ref for p in shared[:5])
        )
    parsed = parse_event_messages(((ctx.fact("kube.events") or {}).get("pod")) or [])
    for msg in parsed[:1]:
        for reason in msg.reasons:
            if reason.qgpu is not None:
                evidence.append(reason.qgpu.describe())
    ctx.emit(
        "SPEC_WHOLE_CARD_SHARED",
        pod=pod_ref(pod),
        requested=f"{core:g}",
        nodes=", ".join(sorted(candidates)),
        evidence=evidence,
        rank=18,
    )


@check("spec.gpu_request", needs=("kube.target",))
def gpu_request(ctx: Context) -> None:
    """A pod that asks for no GPU at all gets no card, even on a GPU node."""
    pod = target_pod(ctx)
    if pod is None or gpu_asks(pod):
        return
    containers = [str(c.get("name", "?")) for c in (pod.get("spec") or {}).get("containers") or []]
    ctx.emit(
        "SPEC_NO_GPU_REQUEST",
        pod=pod_ref(pod),
        container=", ".join(containers),
        evidence=[f"container {c}: no GPU resource in requests or limits" for c in containers],
        rank=35,
    )
