"""Which of a cluster's objects go into a capture: what the diagnosis of a GPU problem reads.

Pure: lists of API objects in, the kept ones out. Kept (``docs/capture.md`` says the same):

- Nodes: all, or only the GPU nodes (``--nodes gpu``); Namespaces: all (their labels are policy);
- Pods: pods that ask for a GPU, pods bound to a GPU node, GPU-stack component pods (device
  plugins, qGPU, HAMi, operator), and every pod of the focus namespaces (``--namespace``, the
  ``--pod``'s) and of namespaces whose ResourceQuota limits a GPU resource;
- workloads (DaemonSets, Deployments, ReplicaSets, StatefulSets, Jobs): the GPU-stack components,
  those whose pod template asks for a GPU, the owners of kept pods (up the ownerReference chain),
  the ReplicaSets of kept Deployments, and every workload of the focus namespaces;
- ResourceQuotas of namespaces with a kept pod or workload; Events about a kept object, newest
  ``MAX_EVENTS``.

The gpubot-node agent's own DaemonSet and pods are left out: the simulator adds them, and each
node's ``agent:`` field says whether its agent answered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bot.kube.gpu import gpu_expectations, is_gpu_component, is_gpu_node
from bot.kube.resources import is_gpu_resource, pod_gpu_requests
from bot.probes.node_agent import AGENT_NAME

Obj = dict[str, Any]

#: events kept, newest first (a busy cluster has tens of thousands)
MAX_EVENTS = 2000
WORKLOAD_KINDS = ("DaemonSet", "Deployment", "ReplicaSet", "StatefulSet", "Job")


@dataclass(frozen=True)
class Scope:
    """What the user asked to capture."""

    #: namespaces whose every pod and workload is kept
    namespaces: tuple[str, ...] = ()
    #: (namespace, name) of a pod the report is about: its namespace is a focus namespace
    pod: tuple[str, str] | None = None
    #: "gpu" (GPU nodes' Node objects only) or "all"
    nodes: str = "all"
    #: the namespace of the bot's own agent (left out of the capture)
    agent_namespace: str = "gpubot"

    @property
    def focus(self) -> set[str]:
        return set(self.namespaces) | ({self.pod[0]} if self.pod else set())


@dataclass
class ClusterObjects:
    """Everything read from the API (before selection) or kept (after)."""

    nodes: list[Obj] = field(default_factory=list)
    namespaces: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    quotas: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    #: kinds that could not be listed, and why
    notes: list[str] = field(default_factory=list)

    def all(self) -> list[Obj]:
        """In the order a scenario file lists them (cluster-scoped first)."""
        return [*self.nodes, *self.namespaces, *self.quotas, *self.workloads, *self.pods, *self.events]


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name", ""))


def _ns(obj: Obj) -> str:
    return str(_meta(obj).get("namespace", ""))


def _key(obj: Obj) -> tuple[str, str, str]:
    return str(obj.get("kind", "")), _ns(obj), _name(obj)


def is_agent(obj: Obj, agent_namespace: str) -> bool:
    """The bot's own node agent (DaemonSet or pod): the simulator brings its own."""
    labels = _meta(obj).get("labels") or {}
    return _ns(obj) == agent_namespace and labels.get("app.kubernetes.io/name") == AGENT_NAME


def _component(obj: Obj) -> bool:
    return is_gpu_component(_name(obj), _meta(obj).get("labels") or {})


def _asks_gpu(pod_like: Obj) -> bool:
    return bool(pod_gpu_requests(pod_like)) or bool(gpu_expectations(pod_like))


def _template_asks_gpu(workload: Obj) -> bool:
    template = (workload.get("spec") or {}).get("template") or {}
    return _asks_gpu({"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}})


def gpu_node_names(nodes: Iterable[Obj], pods: Iterable[Obj]) -> set[str]:
    """GPU nodes as the bot judges them: GPU resources, GPU labels, or a GPU-stack pod on them."""
    component_nodes = {str((p.get("spec") or {}).get("nodeName") or "") for p in pods if _component(p)}
    return {_name(n) for n in nodes if is_gpu_node(n, component_nodes)}


def _gpu_quota_namespaces(quotas: Iterable[Obj]) -> set[str]:
    return {
        _ns(q)
        for q in quotas
        if any(
            is_gpu_resource(str(k).removeprefix("requests.").removeprefix("limits."))
            for k in ((q.get("spec") or {}).get("hard") or {})
        )
    }


def _owners(objs: Iterable[Obj], by_uid: dict[str, Obj]) -> list[Obj]:
    """Every owner up the ownerReference chains of ``objs`` that is among ``by_uid``."""
    out: dict[str, Obj] = {}
    todo = list(objs)
    while todo:
        obj = todo.pop()
        for ref in _meta(obj).get("ownerReferences") or []:
            uid = str(ref.get("uid", ""))
            owner = by_uid.get(uid)
            if owner is not None and uid not in out:
                out[uid] = owner
                todo.append(owner)
    return list(out.values())


def _event_time(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or _meta(event).get("creationTimestamp") or "")


def select(read: ClusterObjects, scope: Scope) -> ClusterObjects:
    """The objects of ``read`` a capture keeps, in a stable order."""
    pods = [p for p in read.pods if not is_agent(p, scope.agent_namespace)]
    workloads = [w for w in read.workloads if not is_agent(w, scope.agent_namespace)]
    gpu_nodes = gpu_node_names(read.nodes, pods)
    nodes = [n for n in read.nodes if scope.nodes == "all" or _name(n) in gpu_nodes]
    focus = scope.focus | _gpu_quota_namespaces(read.quotas)
    kept_pods = [
        p
        for p in pods
        if _ns(p) in focus
        or _asks_gpu(p)
        or _component(p)
        or str((p.get("spec") or {}).get("nodeName") or "") in gpu_nodes
    ]
    by_uid = {str(_meta(w).get("uid", "")): w for w in workloads if _meta(w).get("uid")}
    kept_workloads = {_key(w): w for w in workloads if _ns(w) in focus or _component(w) or _template_asks_gpu(w)}
    for owner in _owners([*kept_pods, *kept_workloads.values()], by_uid):
        kept_workloads[_key(owner)] = owner
    deployments = {str(_meta(w).get("uid", "")) for w in kept_workloads.values() if w.get("kind") == "Deployment"}
    for w in workloads:
        if w.get("kind") == "ReplicaSet" and any(
            str(r.get("uid", "")) in deployments for r in _meta(w).get("ownerReferences") or []
        ):
            kept_workloads[_key(w)] = w
    used_ns = focus | {_ns(p) for p in kept_pods} | {_ns(w) for w in kept_workloads.values()}
    kept = {_key(o) for o in [*nodes, *kept_pods, *kept_workloads.values()]}
    events = [
        e
        for e in read.events
        if _involved(e) in kept or (_ns(e) in scope.focus and _involved(e)[0] not in ("Node", ""))
    ]
    events.sort(key=_event_time, reverse=True)
    notes = list(read.notes)
    if scope.pod is not None and not any((_ns(p), _name(p)) == scope.pod for p in kept_pods):
        notes.append(f"pod {scope.pod[0]}/{scope.pod[1]} not found: its namespace was captured without it")
    order = {k: i for i, k in enumerate(WORKLOAD_KINDS)}
    return ClusterObjects(
        nodes=nodes,
        namespaces=list(read.namespaces),
        pods=kept_pods,
        workloads=sorted(kept_workloads.values(), key=lambda w: (order.get(str(w.get("kind")), 9), _ns(w), _name(w))),
        quotas=[q for q in read.quotas if _ns(q) in used_ns],
        events=sorted(events[:MAX_EVENTS], key=_event_time),
        notes=notes,
    )


def _involved(event: Obj) -> tuple[str, str, str]:
    ref = event.get("involvedObject") or event.get("regarding") or {}
    return str(ref.get("kind", "")), str(ref.get("namespace", "") or ""), str(ref.get("name", ""))
