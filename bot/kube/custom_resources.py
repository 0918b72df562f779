"""The custom resources gpubot reads: one table, by API group.

The read facade (``bot.probes.kube``) refuses a custom read this table does not declare, and the
RBAC the chart grants (and ``gpubot doctor`` checks) is derived from it: the official client's
custom-object calls name no resource in their URL (``{group}/{plural}``), so without one declared
list the permissions a batch-queue or DRA read needs could not be known from the code.
"""

from __future__ import annotations

from bot.kube.batch_workloads import KINDS

#: API group -> the plurals read in it (get and list; no writes, ever)
CUSTOM_READS: dict[str, tuple[str, ...]] = {
    # Kueue: a Job's Workload, its LocalQueue and ClusterQueue
    "kueue.x-k8s.io": ("workloads", "localqueues", "clusterqueues"),
    # Volcano: the gang (PodGroup) and its Queue
    "scheduling.volcano.sh": ("podgroups", "queues"),
    # NVIDIA KAI Scheduler: PodGroups and hierarchical Queues
    "scheduling.run.ai": ("podgroups", "queues"),
    # Dynamic Resource Allocation: claims, device classes and the drivers' published devices
    "resource.k8s.io": ("resourceclaims", "deviceclasses", "resourceslices"),
}
# the custom batch workloads why-pending takes as a target (JobSet, RayJob, MPIJob, Volcano Job):
# their table (bot/kube/batch_workloads.py) names where each is served
for _kind in KINDS:
    CUSTOM_READS[_kind.group] = tuple(dict.fromkeys((*CUSTOM_READS.get(_kind.group, ()), _kind.plural)))


def declared(group: str, plural: str) -> bool:
    """Whether gpubot reads ``plural`` in ``group`` (and so has the RBAC for it)."""
    return plural in CUSTOM_READS.get(group, ())
