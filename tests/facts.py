"""The one way tests build ``Facts`` by hand, and the Kubernetes objects they are made of.

A check is a pure function of ``Facts``, so most of what it decides can be tested without a
cluster: ``facts(...)`` fills every base fact (empty unless given), ``run(check, ...)`` fills only
what the check declares (``reads``/``refines``), as the runner does, so a check that reads an
undeclared fact fails here with ``FactNotGathered`` instead of passing by luck. Runbook tables
come from the shipped runbooks unless a test passes its own.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from bot.commands import Invocation
from bot.engine.check import Check, Detection
from bot.engine.checks import builtin_checks
from bot.engine.facts import DERIVED, EventFacts, Facts, GpuComponents, QuotaFacts, TargetFacts
from bot.engine.queue_facts import DraFacts, QueueFacts
from bot.errors import NodeProbeError
from bot.probes.container import ExecFacts
from bot.probes.observation import NodeObservation
from bot.probes.slim import SlimPod
from bot.report import Skipped

Obj = dict[str, Any]
NS = "ml"


@cache
def shipped_tables() -> dict[str, list[dict[str, Any]]]:
    """Every table of every shipped diagnosis runbook (a table two runbooks share is the same)."""
    from bot.engine.runbooks import load_runbooks

    out: dict[str, list[dict[str, Any]]] = {}
    for rb in load_runbooks().diagnoses.values():
        out.update(rb.tables)
    return out


def facts(
    command: str = "why-pending",
    *,
    pod: Obj | None = None,
    pods: Sequence[Obj] | None = None,
    kind: str | None = None,
    name: str | None = None,
    namespace: str = NS,
    namespace_exists: bool = True,
    workload: Obj | None = None,
    owners: Sequence[Obj] = (),
    inv_nodes: Sequence[str] = (),
    nodes: Iterable[Obj] | Mapping[str, Obj] = (),
    namespaces: Iterable[Obj] = (),
    events: Sequence[Obj] = (),
    owner_events: Sequence[Obj] = (),
    controllers: Sequence[Obj] = (),
    component_pods: Sequence[Obj] = (),
    component_events: Mapping[str, list[Obj]] | None = None,
    node_pods: Mapping[str, list[SlimPod]] | None = None,
    readings: Mapping[str, NodeObservation | NodeProbeError] | None = None,
    peers: Sequence[Obj] = (),
    queues: QueueFacts | None = None,
    dra_inventory: DraFacts | None = None,
    quotas: QuotaFacts | None = None,
    containers: ExecFacts | None = None,
    tables: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    only: Iterable[str] | None = None,
) -> Facts:
    """Facts for one invocation. The target is ``pod`` (kind Pod) unless ``kind``/``workload`` say
    otherwise; ``only`` limits the base facts filled to those (derived names expanded)."""
    if kind is None:
        kind = "Pod" if pod is not None else ("" if command == "node-status" else "Pod")
    if name is None:
        name = str(((pod or workload or {}).get("metadata") or {}).get("name") or ("p" if kind else ""))
    inv = Invocation(command, kind=kind, name=name, namespace=namespace if kind else "default",
                     nodes=tuple(inv_nodes))
    out = Facts(inv, tables=shipped_tables() if tables is None else tables)
    pod_list = list(pods) if pods is not None else ([pod] if pod is not None else [])
    node_map = dict(nodes) if isinstance(nodes, Mapping) else {n["metadata"]["name"]: n for n in nodes}
    values: dict[str, Any] = {
        "target": TargetFacts(kind, name, namespace, namespace_exists, pod=pod, workload=workload,
                              pods=pod_list, owners=list(owners)),
        "events": EventFacts(pod=list(events), owners=list(owner_events)),
        "nodes": node_map,
        "namespaces": {n["metadata"]["name"]: n for n in namespaces},
        "components": GpuComponents(controllers=list(controllers), pods=list(component_pods),
                                    events=dict(component_events or {})),
        "node_pods": dict(node_pods or {}),
        "node_readings": dict(readings or {}),
        "peers": list(peers),
        "queues": queues or QueueFacts(),
        "dra_inventory": dra_inventory or DraFacts(),
        "quotas": quotas or QuotaFacts(),
        "containers": containers,
    }
    wanted = None if only is None else {b for n in only for b in DERIVED.get(n, (n,))}
    for key, value in values.items():
        if wanted is None or key in wanted:
            out.put(key, value)
    return out


def check(name: str) -> Check:
    return builtin_checks()[name]


def run(name: str, /, **kwargs: Any) -> list[Detection]:
    """The detections of check ``name`` on ``facts(**kwargs)`` filled as the runner would
    (only what the check declares); each is also checked against its code's declaration."""
    c = check(name)
    f = facts(only=(*c.reads, *c.refines), **kwargs)
    out: list[Detection] = []
    for outcome in c.run(f):
        if isinstance(outcome, Skipped):
            continue
        assert outcome.code in c.emits, (name, outcome.code)
        declared = next(e for e in c.emits if e == outcome.code)
        params = getattr(declared, "params", None)
        if params is not None:
            keys, required = declared_keys(params)
            assert set(outcome.params) <= keys, (outcome.code, set(outcome.params) - keys)
            assert required <= set(outcome.params), (outcome.code, required - set(outcome.params))
        out.append(outcome)
    return out


def declared_keys(params: type) -> tuple[set[str], set[str]]:
    """(every key, the required keys) of a TypedDict. ``__required_keys__`` cannot be trusted: under
    ``from __future__ import annotations`` Python 3.11 sees ``NotRequired[...]`` as a plain string."""
    hints = typing.get_type_hints(params, include_extras=True)
    required = {k for k, h in hints.items() if typing.get_origin(h) is not typing.NotRequired}
    return set(hints), required


def skipped(name: str, /, **kwargs: Any) -> list[Skipped]:
    c = check(name)
    return [o for o in c.run(facts(only=(*c.reads, *c.refines), **kwargs)) if isinstance(o, Skipped)]


def codes(name: str, /, **kwargs: Any) -> list[str]:
    return [d.code for d in run(name, **kwargs)]


def only(name: str, /, **kwargs: Any) -> Detection:
    """The one detection check ``name`` makes (fails when it makes none or several)."""
    found = run(name, **kwargs)
    assert len(found) == 1, [(d.code, d.params) for d in found]
    return found[0]


# ------------------------------------------------------------------ objects


def pod(
    name: str = "p",
    *,
    namespace: str = NS,
    gpu: float | None = 1,
    resource: str = "nvidia.com/gpu",
    limits: Obj | None = None,
    requests: Obj | None = None,
    node: str | None = None,
    phase: str = "Pending",
    ready: bool = False,
    image: str = "img:1",
    labels: Obj | None = None,
    annotations: Obj | None = None,
    spec: Obj | None = None,
    waiting: Obj | None = None,
    terminated: Obj | None = None,
    last_terminated: Obj | None = None,
    status: Obj | None = None,
    uid: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
    deleting: str | None = None,
    owners: Sequence[Obj] = (),
) -> Obj:
    """A pod with one container ``c`` asking ``gpu`` of ``resource`` (``gpu=None``: no GPU)."""
    resources: Obj = {}
    lim = dict(limits or {})
    if gpu is not None and not limits:
        lim[resource] = str(gpu) if float(gpu) != int(gpu) else str(int(gpu))
    if lim:
        resources["limits"] = lim
    if requests:
        resources["requests"] = dict(requests)
    container: Obj = {"name": "c", "image": image, "resources": resources}
    body: Obj = {"containers": [container], **(spec or {})}
    if node:
        body["nodeName"] = node
    state: Obj = {"waiting": waiting} if waiting else {"terminated": terminated} if terminated else (
        {"running": {"startedAt": created}} if phase == "Running" else {})
    cs: Obj = {"name": "c", "ready": ready, "state": state, "restartCount": 0, "image": image}
    if last_terminated:
        cs["lastState"] = {"terminated": last_terminated}
    meta: Obj = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}", "labels": dict(labels or {}),
                 "annotations": dict(annotations or {}), "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = deleting
    if owners:
        meta["ownerReferences"] = list(owners)
    st: Obj = {"phase": phase, "containerStatuses": [cs] if node or phase != "Pending" else [],
               "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    st.update(status or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": st}


def node(
    name: str,
    *,
    gpu: float | None = 8,
    resource: str = "nvidia.com/gpu",
    capacity: Obj | None = None,
    allocatable: Obj | None = None,
    labels: Obj | None = None,
    taints: Sequence[Any] = (),
    unschedulable: bool = False,
    ready: bool = True,
    ready_reason: str = "KubeletReady",
    annotations: Obj | None = None,
) -> Obj:
    """A node advertising ``gpu`` of ``resource`` (``gpu=None``: a CPU node)."""
    cap: Obj = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if gpu is not None:
        cap[resource] = str(int(gpu)) if float(gpu) == int(gpu) else str(gpu)
    cap.update(capacity or {})
    alloc = dict(cap)
    alloc.update(allocatable or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    cond = {"type": "Ready", "status": "True" if ready else "Unknown", "reason": ready_reason,
            "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status."}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                         "annotations": dict(annotations or {})},
            "spec": spec, "status": {"capacity": cap, "allocatable": alloc, "conditions": [cond]}}


def namespace(name: str, *, labels: Obj | None = None, annotations: Obj | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})},
                         "annotations": dict(annotations or {})}}


def event(
    message: str,
    *,
    reason: str = "FailedScheduling",
    kind: str = "Pod",
    name: str = "p",
    namespace: str = NS,
    component: str = "default-scheduler",
    when: str = "2026-01-01T00:10:00Z",
    count: int = 1,
    type_: str = "Warning",
) -> Obj:
    return {"reason": reason, "message": message, "type": type_, "count": count, "lastTimestamp": when,
            "firstTimestamp": when, "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
            "source": {"component": component}, "metadata": {"name": f"{name}.{reason}", "namespace": namespace}}


def slim(
    name: str,
    node: str,
    *,
    namespace: str = NS,
    gpu: float = 1,
    resource: str = "nvidia.com/gpu",
    phase: str = "Running",
    deleting: str | None = None,
    uid: str | None = None,
    owner: str = "",
    created: str = "2026-01-01T00:00:00Z",
) -> SlimPod:
    """A pod bound to ``node`` as the node-pods loader keeps it."""
    return SlimPod(name, namespace, uid or f"uid-{name}", node, phase, deleting, owner,
                   {resource: gpu} if gpu else {}, created)
