"""Resource types for custom objects a scenario carries (Kueue, Volcano, KAI, DRA, anything).

Why: a real cluster serves whatever CRDs are installed, and the bot must find them through
discovery exactly as it would there. A scenario that carries objects of an apiVersion/kind the
simulator has no built-in type for gets one derived here: the plural from a small table of
known kinds (as their CRDs name them) or the lowercase-plus-s rule, the scope from the same
table or from whether the scenario's objects carry a namespace. A scenario without such objects
serves no such group, so "not installed" is what the bot sees there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.sim.resource_type import PrinterColumn, ResourceType

#: (group, kind) -> (plural, namespaced, short names), as the projects' CRDs declare them
_KNOWN: dict[tuple[str, str], tuple[str, bool, tuple[str, ...]]] = {
    ("kueue.x-k8s.io", "Workload"): ("workloads", True, ("wl",)),
    ("kueue.x-k8s.io", "LocalQueue"): ("localqueues", True, ("queue", "queues", "lq")),
    ("kueue.x-k8s.io", "ClusterQueue"): ("clusterqueues", False, ("cq",)),
    ("kueue.x-k8s.io", "ResourceFlavor"): ("resourceflavors", False, ("flavor", "flavors", "rf")),
    ("kueue.x-k8s.io", "Cohort"): ("cohorts", False, ()),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): ("workloadpriorityclasses", False, ()),
    ("kueue.x-k8s.io", "AdmissionCheck"): ("admissionchecks", False, ()),
    ("scheduling.volcano.sh", "PodGroup"): ("podgroups", True, ("pg", "podgroup-v1beta1")),
    ("scheduling.volcano.sh", "Queue"): ("queues", False, ("q", "queue-v1beta1")),
    ("batch.volcano.sh", "Job"): ("jobs", True, ("vcjob", "vj")),
    ("scheduling.run.ai", "Queue"): ("queues", False, ()),
    ("scheduling.run.ai", "PodGroup"): ("podgroups", True, ()),
    ("scheduling.run.ai", "BindRequest"): ("bindrequests", True, ()),
    ("resource.k8s.io", "ResourceClaim"): ("resourceclaims", True, ()),
    ("resource.k8s.io", "ResourceClaimTemplate"): ("resourceclaimtemplates", True, ()),
    ("resource.k8s.io", "DeviceClass"): ("deviceclasses", False, ()),
    ("resource.k8s.io", "ResourceSlice"): ("resourceslices", False, ()),
}

#: printer columns kubectl shows for the kinds an operator looks at first (a subset of the CRDs')
_COLUMNS: dict[tuple[str, str], tuple[PrinterColumn, ...]] = {
    ("kueue.x-k8s.io", "Workload"): (
        PrinterColumn("Queue", ".spec.queueName"),
        PrinterColumn("Reserved in", ".status.admission.clusterQueue"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
    ("kueue.x-k8s.io", "ClusterQueue"): (
        PrinterColumn("Cohort", ".spec.cohort"),
        PrinterColumn("Pending Workloads", ".status.pendingWorkloads", "integer"),
        PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", "integer"),
    ),
    ("scheduling.volcano.sh", "PodGroup"): (
        PrinterColumn("Status", ".status.phase"),
        PrinterColumn("MinMember", ".spec.minMember", "integer"),
        PrinterColumn("Running", ".status.running", "integer"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
    ("resource.k8s.io", "ResourceSlice"): (
        PrinterColumn("Node", ".spec.nodeName"),
        PrinterColumn("Driver", ".spec.driver"),
        PrinterColumn("Pool", ".spec.pool.name"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
}


def plural_of(kind: str) -> str:
    """The CRD convention when a kind is not in the table: lowercase, then English plural."""
    low = kind.lower()
    if low.endswith("y") and low[-2:-1] not in ("a", "e", "i", "o", "u"):
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    return low + "s"


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def custom_types(objects: Iterable[Any], served: Iterable[ResourceType]) -> tuple[ResourceType, ...]:
    """A type for every (apiVersion, kind) among ``objects`` that ``served`` does not cover.

    Core-group kinds (no ``/`` in apiVersion) are never invented: the core API is fixed.
    """
    known = {(rt.group, rt.version, rt.kind) for rt in served}
    found: dict[tuple[str, str, str], bool] = {}
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        group, version = _split(str(obj.get("apiVersion", "")))
        kind = str(obj.get("kind", ""))
        if not group or not version or not kind or (group, version, kind) in known:
            continue
        has_ns = bool((obj.get("metadata") or {}).get("namespace"))
        found[(group, version, kind)] = found.get((group, version, kind), False) or has_ns
    out = []
    for (group, version, kind), has_ns in sorted(found.items()):
        plural, namespaced, shorts = _KNOWN.get((group, kind), (plural_of(kind), has_ns, ()))
        out.append(
            ResourceType(
                group,
                version,
                plural,
                kind,
                namespaced,
                shorts,
                ("status",),
                columns=_COLUMNS.get((group, kind), ()),
            )
        )
    return tuple(out)
