"""The ``pending_after`` trigger: GPU pods that have waited too long, one problem per workload.

``pending_groups`` lists the cluster's Pending pods (one API request with a ``status.phase``
field selector, so a 100k-pod cluster answers with the few that wait), keeps those that ask for a
GPU, and groups them by their controlling owner (a Job's or ReplicaSet's pods are one problem,
not one per replica); a pod without a controller is its own group. A group is *due* once its
oldest pod has been Pending for ``pending_after_s``. ``pending_problem`` turns the why-pending
report of a due group's oldest pod into a ``Problem`` fingerprinted on (cluster, code of the
first finding, the workload or pod), so the same wait keeps one message however often it is
checked, and a wait whose cause changes becomes a new problem.

A Job (or JobSet, RayJob, MPIJob) Kueue holds has no pod at all: its Workload, not admitted, stands
for it (two more lists, Workloads and LocalQueues, only where Kueue's API is served;
``kueue_groups``), and the diagnosis runs on the workload. Workloads that wait in the same
ClusterQueue for the same reason are one problem, one thread (``queue/CQ``), not one per
workload: a full queue with twenty jobs behind it is one message naming them. A Volcano or KAI
gang's pods are Pending pods of one controller already: one problem per gang.

Phase Pending covers "not scheduled" and "scheduled, containers not started"; a Running pod whose
readiness probe fails is not a GPU wait and is not watched here. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bot.commands import Invocation
from bot.kube.batch_workloads import kind_of
from bot.kube.kueue import is_true
from bot.kube.objects import created_of, meta_of, name_of
from bot.proactive.problems import Problem, fingerprint
from bot.probes.kube import KubeReads, Obj
from bot.probes.slim import slim
from bot.report import Report

#: the subject prefixes of pending problems (node problems are ``node/``, sweep titles ``title/``);
#: ``queue/CQ`` is the workloads a Kueue ClusterQueue holds for one reason
PENDING_SUBJECTS = ("pod/", "workload/", "queue/")
#: the codes that are about a ClusterQueue rather than one workload (grouped by queue)
QUEUE_CODES = ("KUEUE_NOT_ADMITTED", "KUEUE_CLUSTERQUEUE_STOPPED", "KUEUE_EVICTED")


@dataclass(frozen=True)
class PendingGroup:
    """The Pending GPU pods of one workload (or one bare pod)."""

    namespace: str
    #: ``workload/NS/KIND/NAME`` or ``pod/NS/NAME``
    subject: str
    #: the oldest pod of the group: the one why-pending diagnoses
    pod: str
    pods: int
    since: datetime
    #: what why-pending is asked about: the oldest pod, or (a Kueue-held Job, no pod yet) the workload
    kind: str = "Pod"
    #: the Kueue ClusterQueue the workload waits in ("" when not Kueue's, or not known)
    cluster_queue: str = ""

    def invocation(self, cluster: str) -> Invocation:
        return Invocation(
            command="why-pending", kind=self.kind, name=self.pod, namespace=self.namespace, cluster=cluster,
            surface="slack",
        )

    @property
    def label(self) -> str:
        """How the message names what waits: the workload or the pod."""
        return self.subject.split("/", 1)[1]


def namespace_of(subject: str) -> str:
    """The namespace a pending problem's subject names ("" for node and sweep subjects, and for a
    ClusterQueue, which serves many namespaces)."""
    if not subject.startswith(PENDING_SUBJECTS) or subject.startswith("queue/"):
        return ""
    return subject.split("/")[1]


def _created(pod: Obj) -> datetime | None:
    text = created_of(pod)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def group_pending(pods: Iterable[Obj]) -> list[PendingGroup]:
    """Pending pods that ask for a GPU, grouped by controlling owner, oldest group first."""
    groups: dict[str, list[tuple[datetime, str]]] = {}
    namespaces: dict[str, str] = {}
    for pod in pods:
        record = slim(pod)
        created = _created(pod)
        if record.phase != "Pending" or not record.gpu or created is None or record.terminating:
            continue
        if record.owner:
            subject = f"workload/{record.namespace}/{record.owner}"
        else:
            subject = f"pod/{record.namespace}/{record.name}"
        groups.setdefault(subject, []).append((created, record.name))
        namespaces[subject] = record.namespace
    out = []
    for subject, members in groups.items():
        since, oldest = min(members)
        out.append(PendingGroup(namespaces[subject], subject, oldest, len(members), since))
    return sorted(out, key=lambda g: (g.since, g.subject))


#: the workload kinds why-pending can be asked about (``bot.probes.kube`` reads them), besides the
#: custom batch kinds of ``bot.kube.batch_workloads``
DIAGNOSABLE_KINDS = ("Job", "Deployment", "StatefulSet")


def group_unadmitted(workloads: Iterable[Obj], local_queues: Iterable[Obj] = ()) -> list[PendingGroup]:
    """Kueue Workloads neither admitted nor finished, as groups named by their owning workload,
    with the ClusterQueue their LocalQueue points at."""
    cluster_queue = {
        (str(meta_of(q).get("namespace")), name_of(q)):
        str((q.get("spec") or {}).get("clusterQueue") or "")
        for q in local_queues
    }
    out = []
    for w in workloads:
        if is_true(w, "Admitted") or is_true(w, "Finished") or (w.get("spec") or {}).get("active") is False:
            continue
        meta = meta_of(w)
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
        created = _created(w)
        batch = kind_of(owner)
        kind = batch.key if batch is not None else str((owner or {}).get("kind") or "")
        if owner is None or (batch is None and kind not in DIAGNOSABLE_KINDS) or created is None:
            continue
        ns, name = str(meta.get("namespace") or ""), str(owner.get("name") or "")
        queue = cluster_queue.get((ns, str((w.get("spec") or {}).get("queueName") or "")), "")
        out.append(PendingGroup(ns, f"workload/{ns}/{kind}/{name}", name, 0, created, kind=kind, cluster_queue=queue))
    return out


async def kueue_groups(reads: KubeReads) -> list[PendingGroup]:
    """Workloads Kueue has not admitted; nothing (beyond the cached discovery) where Kueue is absent."""
    for version in ("v1beta2", "v1beta1"):
        if await reads.served("kueue.x-k8s.io", version):
            workloads = await reads.list_custom("kueue.x-k8s.io", version, "workloads")
            if not workloads:
                return []
            queues = await reads.list_custom("kueue.x-k8s.io", version, "localqueues")
            return group_unadmitted(workloads, queues)
    return []


async def pending_groups(reads: KubeReads) -> list[PendingGroup]:
    """Every group of Pending GPU pods in the cluster (one field-selected list request), and the
    workloads Kueue holds without a pod."""
    groups = group_pending(await reads.list_pods(field_selector="status.phase=Pending"))
    seen = {g.subject for g in groups}
    held = [g for g in await kueue_groups(reads) if g.subject not in seen]
    return sorted([*groups, *held], key=lambda g: (g.since, g.subject))


def pending_problem(report: Report, group: PendingGroup, *, cluster: str) -> Problem | None:
    """The problem a due group's why-pending report shows, or ``None`` when it found nothing wrong
    (the pod started between the list and the diagnosis). A Kueue workload held by its
    ClusterQueue is keyed on the queue (``queue/CQ``), so every workload it holds for that reason
    shares one problem (``merge_queue_problems`` lists them)."""
    found = [f for f in report.findings if f.severity != "info"]
    if not found:
        return None
    first = found[0]
    # the oldest pod's wait, not a count of replicas: a Job that scales keeps one quiet message
    since = group.since.strftime("%Y-%m-%d %H:%M UTC")
    evidence = (f"{group.label}: Pending since {since}", *first.evidence)
    subject, title = group.subject, f"{group.label}: {first.title}"
    if group.cluster_queue and first.code in QUEUE_CODES:
        subject, title = f"queue/{group.cluster_queue}", f"ClusterQueue {group.cluster_queue}: {title}"
    return Problem(
        fingerprint=fingerprint(cluster, first.code, subject),
        cluster=cluster,
        code=first.code,
        severity=first.severity,
        subject=subject,
        title=title,
        evidence=evidence,
    )


#: workloads a queue problem names at most
MAX_QUEUED_NAMED = 12


def merge_queue_problems(found: list[tuple[Problem, str]]) -> list[Problem]:
    """One problem per fingerprint, from (problem, the workload it was diagnosed for) in diagnosis
    order: the first workload's words, and for a ClusterQueue a line naming every workload it
    holds for the same reason."""
    out: dict[str, Problem] = {}
    waiting: dict[str, list[str]] = {}
    for problem, label in found:
        waiting.setdefault(problem.fingerprint, []).append(label)
        out.setdefault(problem.fingerprint, problem)
    merged = []
    for fp, problem in out.items():
        names = waiting[fp]
        if problem.subject.startswith("queue/") and len(names) > 1:
            more = len(names) - MAX_QUEUED_NAMED
            shown = ", ".join(names[:MAX_QUEUED_NAMED]) + (f" and {more} more" if more > 0 else "")
            line = f"{len(names)} workloads wait in this queue for the same reason: {shown}"
            problem = replace(problem, evidence=(problem.evidence[0], line, *problem.evidence[1:]))
        merged.append(problem)
    return merged
