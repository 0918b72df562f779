"""Registered Kubernetes probes: the target pod or workload, its owners and events, namespaces,
nodes, the pods on GPU nodes and the qGPU components. All reads, through the ``KubeReads`` facade.
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass, field
from typing import Any

from bot.engine.context import Context
from bot.engine.logic.resources import is_gpu_node
from bot.errors import NotFoundError
from bot.probes.slim import SlimPod, slim
from bot.registry import probe

Obj = dict[str, Any]

#: name fragments and labels that identify qGPU components, in whatever namespace they run
QGPU_NAME_HINTS = ("qgpu-manager", "qgpu-scheduler", "qgpu-operator", "qgpu-device-plugin")
#: pods with more GPU nodes than this are listed cluster-wide once instead of node by node
PER_NODE_LIST_LIMIT = 16


@dataclass
class TargetFacts:
    """What the user asked about, resolved."""

    kind: str
    name: str
    namespace: str
    namespace_exists: bool = True
    pod: Obj | None = None
    workload: Obj | None = None
    #: the workload's pods (or just the pod)
    pods: list[Obj] = field(default_factory=list)
    #: owner chain of the pod or workload, nearest first (ReplicaSet, Deployment…)
    owners: list[Obj] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)


def _selector_string(selector: Obj | None) -> str:
    """A label selector string from ``spec.selector`` (matchLabels and matchExpressions)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def _owned_by(obj: Obj, owner: Obj) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    return any(o.get("uid") == uid for o in (obj.get("metadata") or {}).get("ownerReferences") or [])


def _pod_priority(pod: Obj) -> tuple[int, str]:
    """The most interesting pod of a workload first: pending, then not ready, then the rest."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    rank = 0 if phase == "Pending" else 1 if not ready else 2
    return rank, str((pod.get("metadata") or {}).get("name"))


async def _owner_chain(ctx: Context, obj: Obj) -> list[Obj]:
    """Follow controller ownerReferences (Pod → ReplicaSet → Deployment, Pod → Job, …)."""
    chain: list[Obj] = []
    current = obj
    ns = (obj.get("metadata") or {}).get("namespace", "")
    for _ in range(4):
        refs = [
            r for r in (current.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")
        ]
        if not refs or refs[0].get("kind") not in (
            "ReplicaSet",
            "Deployment",
            "StatefulSet",
            "Job",
            "DaemonSet",
        ):
            break
        try:
            current = await ctx.kube.get_object(refs[0]["kind"], refs[0]["name"], ns)
        except NotFoundError:
            break
        chain.append(current)
    return chain


async def _suggest(ctx: Context, t: TargetFacts) -> None:
    """Close names, so a typo gets 'did you mean'."""
    if not t.namespace_exists:
        names = [(n.get("metadata") or {}).get("name", "") for n in await ctx.kube.list_namespaces()]
        t.suggestions = difflib.get_close_matches(t.namespace, names, n=3, cutoff=0.5)
        return
    pods = await ctx.kube.list_pods(t.namespace)
    names = [(p.get("metadata") or {}).get("name", "") for p in pods]
    t.suggestions = difflib.get_close_matches(t.name, names, n=3, cutoff=0.5)


@probe("kube.target")
async def target(ctx: Context) -> None:
    """Resolve the pod or workload; on a miss, find out whether the namespace exists and close names."""
    inv = ctx.inv
    t = TargetFacts(kind=inv.kind, name=inv.name, namespace=inv.namespace)
    ctx.facts["kube.target"] = t
    if not inv.kind:
        return  # node-status has no target; node.physical needs this probe only for the others
    try:
        if inv.kind == "Pod":
            t.pod = await ctx.kube.get_object("Pod", inv.name, inv.namespace)
            t.pods = [t.pod]
            t.owners = await _owner_chain(ctx, t.pod)
            return
        t.workload = await ctx.kube.get_object(inv.kind, inv.name, inv.namespace)
    except NotFoundError:
        try:
            await ctx.kube.get_object("Namespace", inv.namespace)
        except NotFoundError:
            t.namespace_exists = False
        await _suggest(ctx, t)
        return
    workload = t.workload
    t.owners = [workload, *await _owner_chain(ctx, workload)]
    selector = _selector_string((workload.get("spec") or {}).get("selector"))
    candidates = await ctx.kube.list_pods(inv.namespace, label_selector=selector) if selector else []
    if inv.kind == "Deployment":
        # Pods belong to the Deployment through its ReplicaSets; the selector already narrows them.
        # The ReplicaSets are where a webhook denial is recorded (FailedCreate), newest first.
        sets = await ctx.kube.list_replicasets(inv.namespace, label_selector=selector) if selector else []
        mine = [rs for rs in sets if _owned_by(rs, workload)]
        mine.sort(key=lambda rs: str((rs.get("metadata") or {}).get("creationTimestamp", "")), reverse=True)
        t.owners = [workload, *mine[:3]]
        t.pods = candidates
    else:
        t.pods = [p for p in candidates if _owned_by(p, workload)] or candidates
    t.pods.sort(key=_pod_priority)
    t.pod = t.pods[0] if t.pods else None


@probe("kube.events", needs=("kube.target",))
async def events(ctx: Context) -> None:
    """Events of the pod and of its owners (FailedCreate of a webhook denial lives on the owner)."""
    t: TargetFacts | None = ctx.fact("kube.target")
    ctx.facts["kube.events"] = {"pod": [], "owners": []}
    if t is None or not t.namespace_exists:
        return
    jobs = []
    if t.pod is not None:
        name = (t.pod.get("metadata") or {}).get("name")
        jobs.append(ctx.kube.list_events(t.namespace, field_selector=f"involvedObject.name={name}"))
    for owner in t.owners:
        name = (owner.get("metadata") or {}).get("name")
        jobs.append(ctx.kube.list_events(t.namespace, field_selector=f"involvedObject.name={name}"))
    results = await asyncio.gather(*jobs)
    if t.pod is not None:
        ctx.facts["kube.events"]["pod"] = results[0]
        results = results[1:]
    ctx.facts["kube.events"]["owners"] = [e for batch in results for e in batch]


@probe("kube.namespaces")
async def namespaces(ctx: Context) -> None:
    """Every namespace with its labels: the policy label and the System-vs-Tenant diff need them."""
    ctx.facts["kube.namespaces"] = {
        (n.get("metadata") or {}).get("name", ""): n for n in await ctx.kube.list_namespaces()
    }


@probe("kube.nodes")
async def nodes(ctx: Context) -> None:
    """All nodes (taints, labels, capacity, conditions); node-status narrows to the asked ones."""
    all_nodes = await ctx.kube.list_nodes()
    ctx.facts["kube.nodes"] = {(n.get("metadata") or {}).get("name", ""): n for n in all_nodes}


def gpu_node_names(ctx: Context) -> list[str]:
    """GPU nodes in scope: the asked nodes for node-status, otherwise every GPU node."""
    all_nodes: dict[str, Obj] | None = ctx.fact("kube.nodes")
    if all_nodes is None:
        return []
    cached: list[str] | None = ctx.fact("_gpu_node_names")
    if cached is not None:
        return cached
    names = [n for n, obj in all_nodes.items() if is_gpu_node(obj)]
    if ctx.inv.nodes:
        names = [n for n in ctx.inv.nodes if n in all_nodes]
    ctx.facts["_gpu_node_names"] = sorted(names)  # several probes and checks ask; nodes do not change mid-question
    return ctx.facts["_gpu_node_names"]


@probe("kube.node_pods", needs=("kube.nodes",))
async def node_pods(ctx: Context) -> None:
    """Slim records of the pods bound to GPU nodes (and of the target pod's node)."""
    names = set(gpu_node_names(ctx))
    t: TargetFacts | None = ctx.fact("kube.target")
    if t is not None and t.pod is not None:
        node = (t.pod.get("spec") or {}).get("nodeName")
        if node:
            names.add(node)
    by_node: dict[str, list[SlimPod]] = {n: [] for n in names}
    # The watch-fed cache (bot.probes.cache) answers from its node index without rebuilding dicts.
    fast = getattr(ctx.kube, "slim_pods_by_node", None)
    cached = await fast(names) if fast is not None else None
    if cached is not None:
        ctx.facts["kube.node_pods"] = {n: cached.get(n, []) for n in names}
        return
    if len(names) <= PER_NODE_LIST_LIMIT:
        batches = await asyncio.gather(
            *(ctx.kube.list_pods(field_selector=f"spec.nodeName={n}") for n in sorted(names))
        )
        pods = [slim(p) for batch in batches for p in batch]
    else:
        paged = getattr(ctx.kube, "slim_pods", None)
        pods = await paged() if paged is not None else [slim(p) for p in await ctx.kube.list_pods()]
    for p in pods:
        if p.node in by_node:
            by_node[p.node].append(p)
    ctx.facts["kube.node_pods"] = by_node


@probe("qgpu.components")
async def qgpu_components(ctx: Context) -> None:
    """qGPU manager/scheduler DaemonSets, Deployments and pods, found by name or label anywhere."""
    daemonsets, deployments = await asyncio.gather(ctx.kube.list_daemonsets(), ctx.kube.list_deployments())

    def is_qgpu(obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        text = " ".join([str(meta.get("name", ""))] + [str(v) for v in (meta.get("labels") or {}).values()])
        return "qgpu" in text.lower()

    controllers = [o for o in [*daemonsets, *deployments] if is_qgpu(o)]
    pods: list[Obj] = []
    for ctrl in controllers:
        selector = _selector_string((ctrl.get("spec") or {}).get("selector"))
        ns = (ctrl.get("metadata") or {}).get("namespace", "")
        if selector:
            pods.extend(await ctx.kube.list_pods(ns, label_selector=selector))
    if not controllers:
        # Some installs run bare pods: fall back to the well-known app labels.
        apps = ",".join(QGPU_NAME_HINTS)
        pods = await ctx.kube.list_pods(label_selector=f"app in ({apps})")
    ctx.facts["qgpu.components"] = {"controllers": controllers, "pods": pods}
