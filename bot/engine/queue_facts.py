"""Facts about the batch queues in front of kube-scheduler: Kueue, Volcano, KAI Scheduler.

Why a fact of its own: a Job that Kueue holds has no pod, and a gang that Volcano holds is many
pods that each say little; what explains them is in custom objects (Workload, ClusterQueue,
PodGroup, Queue) that exist only where that system is installed. ``None`` means the target is
not managed by that system (nothing was read for it); ``installed`` False means the target asks
for it but the cluster does not serve its API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass
class KueueFacts:
    """A target labelled for a Kueue LocalQueue, and what Kueue holds about it."""

    queue_name: str
    installed: bool = True
    #: the Workload Kueue made for the target (None: none exists)
    workload: Obj | None = None
    local_queue: Obj | None = None
    cluster_queue: Obj | None = None
    #: Workloads holding quota in the same ClusterQueue (status.admission), the target's excluded
    admitted: list[Obj] = field(default_factory=list)
    #: the other ClusterQueues of the cohort (borrowing), when the ClusterQueue has one
    cohort_queues: list[Obj] = field(default_factory=list)


@dataclass
class GangFacts:
    """A pod group (Volcano or KAI) the target belongs to, its queue and its pods."""

    system: str
    group_name: str
    installed: bool = True
    pod_group: Obj | None = None
    queue_name: str = ""
    queue: Obj | None = None
    #: every pod of the group (the target's namespace, same group annotation)
    pods: list[Obj] = field(default_factory=list)
    #: the scheduler's events about the PodGroup itself (Volcano records "Unschedulable" there)
    events: list[Obj] = field(default_factory=list)
    #: KAI's hierarchy: the queue's parent, its parent, ... (nearest first)
    parents: list[Obj] = field(default_factory=list)
    #: a parentQueue named in the chain that does not exist ("" when none is missing)
    missing_parent: str = ""


@dataclass
class DraFacts:
    """A pod's DRA ResourceClaims with the DeviceClasses and ResourceSlices they are allocated from."""

    #: the resource.k8s.io version served ("" when the API is not served)
    version: str = ""
    #: the pod's ResourceClaims by name (absent: not created yet)
    claims: dict[str, Obj] = field(default_factory=dict)
    device_classes: dict[str, Obj] = field(default_factory=dict)
    slices: list[Obj] = field(default_factory=list)
    #: every ResourceClaim in the cluster (who holds the matching devices)
    all_claims: list[Obj] = field(default_factory=list)
    #: allocated claim (namespace/name) -> the pods its status.reservedFor names that no longer
    #: exist (by name, or by uid: a pod recreated under the same name is another pod)
    gone_reservations: dict[str, list[str]] = field(default_factory=dict)
    #: claim (namespace/name) -> why its reserving pods could not be read (nothing concluded)
    unchecked_reservations: dict[str, str] = field(default_factory=dict)
    #: DaemonSets that run a DRA driver's kubelet plugin (``bot.kube.dra_plugins``)
    plugin_sets: list[Obj] = field(default_factory=list)
    #: "namespace/name" of each of those DaemonSets -> its pods
    plugin_pods: dict[str, list[Obj]] = field(default_factory=dict)
    #: why the kubelet-plugin DaemonSets or pods could not be read ("" when they were)
    plugins_unread: str = ""


@dataclass
class QueueFacts:
    """Which batch systems manage the target, with their objects (None: not managed by it)."""

    kueue: KueueFacts | None = None
    volcano: GangFacts | None = None
    kai: GangFacts | None = None
    dra: DraFacts | None = None
