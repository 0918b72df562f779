"""Which GPU pods do not run, and whose they are: the scan behind ``gpubot pending``.

A pod counts when it asks for a GPU resource (``bot.kube.resources``), is not finished
(Succeeded/Failed) and not being deleted, and is not Running and Ready (``bot.kube.story``'s
rule, the one why-pending tells a story for). Pods of one workload (a Deployment through its
ReplicaSet, a StatefulSet, a Job) collapse to one ``Stuck`` entry: the workload is what a person
fixes, and why-pending diagnoses it as such.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.kube.objects import Obj, created_of, meta_of, name_of, namespace_of, owner_refs_of
from bot.kube.pod_status import classify
from bot.kube.resources import is_gpu_resource, pod_gpu_requests
from bot.kube.scheduling import failed_scheduling_events
from bot.kube.story import needs_story

#: owner kinds why-pending takes as a workload (``bot.names.WORKLOAD_KINDS``)
WORKLOADS = ("Deployment", "StatefulSet", "Job")
_DIGITS = re.compile(r"\d+")


@dataclass
class Stuck:
    """One workload (or bare pod) with GPU pods that do not run."""

    namespace: str
    kind: str
    name: str
    pods: list[Obj] = field(default_factory=list)
    #: what makes two workloads "like" each other before a diagnosis: the pods' state, the GPU
    #: resources asked for and the scheduler's newest words with the numbers taken out
    signature: tuple[str, ...] = ()
    #: diagnose the first pod instead of the workload (its owner object could not be found)
    by_pod: bool = False

    def asked(self) -> tuple[str, str]:
        """(kind, name) why-pending is asked about."""
        if self.by_pod or self.kind == "Pod":
            return "Pod", name_of(self.pods[0])
        return self.kind, self.name

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.kind.lower()}/{self.name}"

    @property
    def shown(self) -> str:
        """As typed to why-pending: ``POD`` or ``kind/NAME`` (the pod when its owner is gone)."""
        kind, name = self.asked()
        return name if kind == "Pod" else f"{kind.lower()}/{name}"

    def oldest(self) -> str:
        stamps = [created_of(p) for p in self.pods]
        return min((s for s in stamps if s), default="")


def _settled(pod: Mapping[str, Any]) -> bool:
    """Cheap first look (the scan sees every pod of the cluster): finished, being deleted, or
    Running and Ready. Only the rest are classified in full."""
    meta, status = meta_of(pod), pod.get("status") or {}
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
        return True
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
    return phase == "Running" and ready


def _asks_gpu(pod: Mapping[str, Any]) -> bool:
    """Whether any container names a GPU resource (names only: quantities are parsed later)."""
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        for part in (res.get("requests") or {}, res.get("limits") or {}):
            if any(is_gpu_resource(k) for k in part):
                return True
    return False


def is_stuck_gpu_pod(pod: Mapping[str, Any]) -> bool:
    """A GPU pod that should run and does not (pending, not ready, crash-looping)."""
    if _settled(pod) or not _asks_gpu(pod) or not pod_gpu_requests(pod):
        return False
    state = classify(pod)
    if state.terminating or state.phase in ("Succeeded", "Failed"):
        return False
    return needs_story(pod)


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = owner_refs_of(obj)
    return next((r for r in refs if r.get("controller")), None)


def owner_of(pod: Mapping[str, Any], replicasets: Mapping[tuple[str, str], Obj]) -> tuple[str, str]:
    """(kind, name) of the workload why-pending should be asked about for ``pod``."""
    meta = meta_of(pod)
    ref = _controller(pod)
    if ref is None:
        return "Pod", str(meta.get("name") or "")
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    if kind == "ReplicaSet":
        rs = replicasets.get((str(meta.get("namespace") or ""), name))
        up = _controller(rs) if rs is not None else None
        if up is not None and up.get("kind") == "Deployment":
            return "Deployment", str(up.get("name") or "")
        return "ReplicaSet", name
    if kind in WORKLOADS:
        return kind, name
    return "Pod", str(meta.get("name") or "")


def group(pods: Iterable[Obj], replicasets: Mapping[tuple[str, str], Obj]) -> list[Stuck]:
    """The stuck pods by workload, in namespace and name order."""
    out: dict[tuple[str, str, str], Stuck] = {}
    for pod in pods:
        ns = namespace_of(pod)
        kind, name = owner_of(pod, replicasets)
        entry = out.get((ns, kind, name))
        if entry is None:
            entry = out[(ns, kind, name)] = Stuck(ns, kind, name)
        entry.pods.append(pod)
    return [out[k] for k in sorted(out)]


def signature(stuck: Stuck, events_by_name: Mapping[str, list[Obj]]) -> tuple[str, ...]:
    """What the workload's first pod shows before any diagnosis (see ``Stuck.signature``)."""
    pod = stuck.pods[0]
    name = name_of(pod)
    newest = failed_scheduling_events(events_by_name.get(name, ()))
    words = _DIGITS.sub("N", str(newest[0].get("message") or newest[0].get("note") or "")) if newest else ""
    return (classify(pod).reason, ",".join(sorted(pod_gpu_requests(pod))), words)


def age(stamp: str, now: datetime | None = None) -> str:
    """``kubectl get``'s AGE: 45s, 12m, 3h, 5d."""
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
