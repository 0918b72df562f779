"""Small helpers the checks share: the target pod, its GPU asks, candidate nodes."""

from __future__ import annotations

from typing import Any

from bot.engine.context import Context
from bot.engine.logic.resources import pod_gpu_requests
from bot.probes.facts_kube import TargetFacts

Obj = dict[str, Any]

QGPU_CORE = "tke.cloud.tencent.com/qgpu-core"
QGPU_MEMORY = "tke.cloud.tencent.com/qgpu-memory"


def target(ctx: Context) -> TargetFacts | None:
    return ctx.fact("kube.target")


def target_pod(ctx: Context) -> Obj | None:
    t = target(ctx)
    return t.pod if t is not None else None


def pod_ref(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def is_unscheduled(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Pending" and not (pod.get("spec") or {}).get("nodeName")


def gpu_asks(pod: Obj) -> dict[str, float]:
    return pod_gpu_requests(pod)


def asks_qgpu(pod: Obj) -> bool:
    return any(r.startswith("tke.cloud.tencent.com/qgpu") for r in gpu_asks(pod))


def nodes(ctx: Context) -> dict[str, Obj]:
    return ctx.fact("kube.nodes") or {}


def candidate_nodes(ctx: Context, pod: Obj) -> dict[str, Obj]:
    """Nodes that offer every GPU resource the pod asks for (all nodes if it asks none)."""
    key = ("_candidates", id(pod))
    cached = ctx.facts.get(str(key))
    if cached is not None:
        return dict(cached)
    wanted = set(gpu_asks(pod))
    out = {}
    for name, node in nodes(ctx).items():
        capacity = (node.get("status") or {}).get("capacity") or {}
        if wanted <= set(capacity):
            out[name] = node
    ctx.facts[str(key)] = out  # asked by most scheduling checks; the nodes do not change mid-question
    return dict(out)


def fmt_num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
