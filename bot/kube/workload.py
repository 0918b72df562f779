"""How far a workload is from what it wants: desired, current and ready replicas, in one shape.

Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets each report progress in their own
status fields; a diagnosis needs one answer: does this workload have the pods it asks for, and
are they ready? Also the pod template (what one more pod would request) and the controller's
``ReplicaFailure`` condition, which keeps a pod-creation error after its event has expired.
It never performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import meta_of, name_of

Obj = Mapping[str, Any]


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class WorkloadStatus:
    """Replicas a workload wants and has."""

    kind: str
    name: str
    #: pods it wants running now (a finished Job wants none)
    desired: int
    #: pods that exist (status.replicas, Job active, DaemonSet currentNumberScheduled)
    current: int
    ready: int
    #: pods of the newest revision (Deployment/StatefulSet), None where the kind has no such count
    updated: int | None = None
    #: a finished Job (Complete or Failed condition)
    finished: bool = False

    @property
    def satisfied(self) -> bool:
        """Every wanted pod exists, is ready and (where tracked) runs the newest revision."""
        if self.ready < self.desired:
            return False
        return self.updated is None or self.updated >= self.desired

    def describe(self) -> str:
        parts = [f"{self.desired} desired", f"{self.current} created", f"{self.ready} ready"]
        if self.updated is not None:
            parts.append(f"{self.updated} up to date")
        if self.finished:
            parts.append("finished")
        return f"{self.kind.lower()} {self.name}: " + ", ".join(parts)


def _conditions(obj: Obj) -> list[Obj]:
    return [c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]


def workload_status(obj: Obj) -> WorkloadStatus | None:
    """The replica counts of a Deployment, ReplicaSet, StatefulSet, Job or DaemonSet."""
    kind = str(obj.get("kind") or "")
    name = name_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        desired = _int(spec.get("replicas"), 1)
        updated = None
        if kind == "Deployment":
            updated = _int(status.get("updatedReplicas"))
        elif kind == "StatefulSet":
            updated = _int(status.get("updatedReplicas"), _int(status.get("readyReplicas")))
        return WorkloadStatus(kind, name, desired, _int(status.get("replicas")), _int(status.get("readyReplicas")),
                              updated)
    if kind == "Job" and str(obj.get("apiVersion") or "batch/v1") == "batch/v1":  # not a Volcano Job
        finished = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in _conditions(obj)
        )
        parallelism = _int(spec.get("parallelism"), 1)
        completions = spec.get("completions")
        remaining = parallelism
        if completions is not None:
            remaining = max(0, min(parallelism, _int(completions, 1) - _int(status.get("succeeded"))))
        desired = 0 if finished or spec.get("suspend") is True else remaining
        active = _int(status.get("active"))
        ready = _int(status.get("ready"), active)
        return WorkloadStatus(kind, name, desired, active, ready, None, finished)
    if kind == "DaemonSet":
        return WorkloadStatus(
            kind, name, _int(status.get("desiredNumberScheduled")), _int(status.get("currentNumberScheduled")),
            _int(status.get("numberReady")), None,
        )
    return None


def replica_failure(obj: Obj) -> str | None:
    """The message of a True ``ReplicaFailure`` condition (Deployment, ReplicaSet), if any."""
    for cond in _conditions(obj):
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
            return str(cond.get("message") or cond.get("reason") or "")
    return None


def pod_template(obj: Obj) -> dict[str, Any] | None:
    """The pod a controller would create next, as a pod-shaped dict (namespace filled in)."""
    template = (obj.get("spec") or {}).get("template")
    if not isinstance(template, Mapping):
        return None
    meta = dict(template.get("metadata") or {})
    meta.setdefault("namespace", meta_of(obj).get("namespace"))
    meta.setdefault("name", f"{(obj.get('metadata') or {}).get('name', '')}-<new>")
    return {"metadata": meta, "spec": dict(template.get("spec") or {}), "status": {"phase": "Pending"}}


__all__ = ["WorkloadStatus", "pod_template", "replica_failure", "workload_status"]
