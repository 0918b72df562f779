"""Batch workloads defined by custom resources: JobSet, RayJob, RayCluster, MPIJob, Volcano Job.

Why a table: these are what ML teams submit to Kueue or Volcano, and ``why-pending jobset/x``
must find them the way ``why-pending job/x`` finds a Job. None has a pod selector, and each
marks its pods with its own label, so the table says, per kind, where it is served, which label
names its pods and which field suspends it. Kueue's Workload for each is owned by the object
(``<kind>-<name>-<hash>``, pkg/controller/jobframework/workload_names.go); it is matched by that
owner reference, never by recomputing the hash. Pure data and helpers; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import name_of

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class BatchKind:
    """How one custom batch kind is read, and how its pods are found."""

    #: the name gpubot uses for it (``TargetFacts.kind``): unique, unlike the API kind, and
    #: lowercased it is what a user types (``vcjob/NAME``, as kubectl's short name)
    key: str
    #: the kind the API serves (Volcano's is ``Job``, in its own group)
    kind: str
    group: str
    #: newest first; the first one the server serves is read
    versions: tuple[str, ...]
    plural: str
    #: the label the controller puts on the pods it makes, whose value is ``pod_owner_name``'s answer
    pod_label: str
    #: spec path of the suspend flag Kueue sets (``("runPolicy", "suspend")`` for an MPIJob)
    suspend_path: tuple[str, ...] = ("suspend",)


KINDS: tuple[BatchKind, ...] = (
    BatchKind("JobSet", "JobSet", "jobset.x-k8s.io", ("v1alpha2",), "jobsets", "jobset.sigs.k8s.io/jobset-name"),
    BatchKind("RayJob", "RayJob", "ray.io", ("v1", "v1alpha1"), "rayjobs", "ray.io/cluster"),
    BatchKind("RayCluster", "RayCluster", "ray.io", ("v1", "v1alpha1"), "rayclusters", "ray.io/cluster"),
    BatchKind("MPIJob", "MPIJob", "kubeflow.org", ("v2beta1",), "mpijobs", "training.kubeflow.org/job-name",
              ("runPolicy", "suspend")),
    BatchKind("VcJob", "Job", "batch.volcano.sh", ("v1alpha1",), "jobs", "volcano.sh/job-name"),
)
BY_KEY: dict[str, BatchKind] = {k.key: k for k in KINDS}
_BY_API: dict[tuple[str, str], BatchKind] = {(k.group, k.kind): k for k in KINDS}


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def kind_of(obj: Obj | None) -> BatchKind | None:
    """The table row of an object (or an owner reference: both carry apiVersion and kind)."""
    if not obj:
        return None
    return _BY_API.get((group_of(str(obj.get("apiVersion") or "")), str(obj.get("kind") or "")))


def pod_owner_name(kind: BatchKind, obj: Obj) -> str:
    """The value of ``kind.pod_label`` on the object's pods ("" when it has none yet).

    A RayJob's pods belong to the RayCluster it made (``status.rayClusterName``); a suspended
    RayJob has none."""
    if kind.key == "RayJob":
        return str((obj.get("status") or {}).get("rayClusterName") or "")
    return name_of(obj)


def suspended(obj: Obj | None) -> bool:
    """Whether a custom batch object (per its table row) or a plain Job is suspended."""
    if not obj:
        return False
    kind = kind_of(obj)
    value: Any = obj.get("spec") or {}
    for key in kind.suspend_path if kind is not None else ("suspend",):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value is True


def display(obj: Obj | None, fallback: str = "") -> str:
    """``jobset``, ``rayjob``, ``vcjob``: what a user types for this object's kind."""
    kind = kind_of(obj)
    if kind is not None:
        return kind.key.lower()
    return str((obj or {}).get("kind") or fallback or "pod").lower()


__all__ = ["BY_KEY", "KINDS", "BatchKind", "display", "kind_of", "pod_owner_name", "suspended"]
