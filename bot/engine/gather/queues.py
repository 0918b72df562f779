"""Loader of the batch-queue fact: Kueue's Workload and queues, Volcano's or KAI's PodGroup and Queue.

Read only for a target that names the system (a queue-name label, a pod-group annotation, the
system's schedulerName), so a cluster without them, or a pod that does not use them, costs no
request at all; where one is named, discovery (one cached ``/apis`` read, ``KubeReads.served``)
says whether the API exists before anything else is asked. A read that fails is raised: the
gatherer marks the fact unreadable, and no check concludes from it.
"""

from __future__ import annotations

import asyncio

from bot.engine.facts import Facts
from bot.engine.gather.sources import Sources
from bot.engine.queue_facts import DraFacts, GangFacts, KueueFacts, QueueFacts
from bot.errors import KubeApiError, NotFoundError
from bot.kube.batch_workloads import kind_of
from bot.kube.dra import pod_claims
from bot.kube.dra_devices import is_allocated, reserving_pods
from bot.kube.dra_plugins import is_plugin_daemonset
from bot.kube.objects import Obj, meta_of
from bot.kube.selectors import selector_string
from bot.probes.kube import KubeReads

KUEUE = "kueue.x-k8s.io"
#: newest first: Kueue 0.15 serves v1beta2 beside v1beta1
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO = "scheduling.volcano.sh"
VOLCANO_VERSIONS = ("v1beta1",)
#: the annotation Volcano (and the coscheduling plugin's v1beta1 API) puts on a gang's pods
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
KAI = "scheduling.run.ai"
KAI_GROUP_VERSIONS = ("v2alpha2",)
KAI_QUEUE_VERSIONS = ("v2",)
KAI_GROUP_ANNOTATION = "pod-group-name"
KAI_QUEUE_LABELS = ("kai.scheduler/queue", "runai/queue")
#: ancestors of a KAI queue read at most (real hierarchies are two or three levels deep)
MAX_QUEUE_DEPTH = 4
DRA = "resource.k8s.io"
#: newest first: v1 from Kubernetes 1.34, v1beta2 in 1.33, v1beta1 in 1.32
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
#: reserving pods read to tell a stale reservation (one get each, at most this many per diagnosis)
MAX_RESERVATION_READS = 32



def _subjects(facts: Facts) -> list[Obj]:
    t = facts.target
    return [o for o in (t.workload, t.pod, *t.owners) if o is not None]


def _label(objs: list[Obj], key: str) -> str:
    for obj in objs:
        meta = meta_of(obj)
        value = (meta.get("labels") or {}).get(key) or (meta.get("annotations") or {}).get(key)
        if value:
            return str(value)
    return ""


async def _version(kube: KubeReads, group: str, versions: tuple[str, ...]) -> str:
    """The newest of ``versions`` the server serves, "" when none is (not installed)."""
    for version in versions:
        if await kube.served(group, version):
            return version
    return ""


async def _get(kube: KubeReads, group: str, version: str, plural: str, name: str, namespace: str = "") -> Obj | None:
    """The object, or None when it does not exist (an answer, not a failure)."""
    try:
        return await kube.get_custom(group, version, plural, name, namespace)
    except NotFoundError:
        return None


def _owned_by_any(obj: Obj, uids: set[str]) -> bool:
    refs = meta_of(obj).get("ownerReferences") or []
    if any(r.get("uid") in uids for r in refs):
        return True
    return (meta_of(obj).get("labels") or {}).get("kueue.x-k8s.io/job-uid") in uids


def _admitted_in(workload: Obj) -> str:
    return str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")


async def _kueue(facts: Facts, kube: KubeReads) -> KueueFacts | None:
    subjects = _subjects(facts)
    queue = _label(subjects, KUEUE_QUEUE_LABEL)
    if not queue:
        return None
    out = KueueFacts(queue_name=queue)
    version = await _version(kube, KUEUE, KUEUE_VERSIONS)
    if not version:
        out.installed = False
        return out
    ns = facts.target.namespace
    uids = {str(meta_of(o).get("uid")) for o in subjects if meta_of(o).get("uid")}
    workloads = await kube.list_custom(KUEUE, version, "workloads")
    mine = [w for w in workloads if meta_of(w).get("namespace") == ns and _owned_by_any(w, uids)]
    mine.sort(key=lambda w: str(meta_of(w).get("creationTimestamp", "")), reverse=True)
    out.workload = mine[0] if mine else None
    queue = str(((out.workload or {}).get("spec") or {}).get("queueName") or queue)
    out.queue_name = queue
    out.local_queue = await _get(kube, KUEUE, version, "localqueues", queue, ns)
    cq_name = str(((out.local_queue or {}).get("spec") or {}).get("clusterQueue") or "")
    if not cq_name:
        return out
    out.cluster_queue = await _get(kube, KUEUE, version, "clusterqueues", cq_name)
    own = meta_of(out.workload).get("uid")
    out.admitted = [
        w for w in workloads if _admitted_in(w) == cq_name and meta_of(w).get("uid") != own
    ]
    spec = (out.cluster_queue or {}).get("spec") or {}
    cohort = spec.get("cohort") or spec.get("cohortName")
    if cohort:
        queues = await kube.list_custom(KUEUE, version, "clusterqueues")
        out.cohort_queues = [
            q
            for q in queues
            if ((q.get("spec") or {}).get("cohort") or (q.get("spec") or {}).get("cohortName")) == cohort
            and meta_of(q).get("name") != cq_name
        ]
    return out


async def _job_group(facts: Facts, kube: KubeReads) -> GangFacts | None:
    """A Volcano Job with no pod yet: its PodGroup, found by the owner reference to the Job (Volcano
    names it ``<job>-<uid>`` in newer releases, ``<job>`` in older ones: the reference holds in both).
    Volcano's job controller creates the pods only once the PodGroup is enqueued, so a Job its queue
    holds has none to start from."""
    job = facts.target.workload
    batch = kind_of(job)
    if job is None or batch is None or batch.key != "VcJob":
        return None
    spec = job.get("spec") or {}
    out = GangFacts(system="volcano", group_name="")
    version = await _version(kube, VOLCANO, VOLCANO_VERSIONS)
    if not version:
        out.installed = False
        return out
    ns = facts.target.namespace
    uid = str(meta_of(job).get("uid") or "")
    groups = await kube.list_custom(VOLCANO, version, "podgroups", ns)
    out.pod_group = next((g for g in groups if _owned_by_any(g, {uid})), None)
    out.group_name = str(meta_of(out.pod_group).get("name") or "")
    if out.pod_group is not None:
        out.events = await kube.list_events(ns, field_selector=f"involvedObject.name={out.group_name}")
    queue = str(((out.pod_group or {}).get("spec") or {}).get("queue") or spec.get("queue") or "default")
    out.queue_name = queue
    out.queue = await _get(kube, VOLCANO, version, "queues", queue)
    return out


async def _parents(kube: KubeReads, out: GangFacts, group: str, version: str) -> None:
    """KAI's queues are hierarchical: a parent's limit binds its children, so each ancestor is read
    (one get each, at most ``MAX_QUEUE_DEPTH``; a cycle stops the walk)."""
    seen = {out.queue_name}
    parent = str(((out.queue or {}).get("spec") or {}).get("parentQueue") or "")
    while parent and parent not in seen and len(out.parents) < MAX_QUEUE_DEPTH:
        found = await _get(kube, group, version, "queues", parent)
        if found is None:
            out.missing_parent = parent
            return
        out.parents.append(found)
        seen.add(parent)
        parent = str((found.get("spec") or {}).get("parentQueue") or "")


async def _gang(facts: Facts, kube: KubeReads, system: str) -> GangFacts | None:
    pod = facts.target.pod
    if pod is None:
        return await _job_group(facts, kube) if system == "volcano" else None
    meta, spec = meta_of(pod), pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    scheduler = str(spec.get("schedulerName") or "")
    if system == "volcano":
        group_key, group, versions = VOLCANO_GROUP_ANNOTATION, VOLCANO, VOLCANO_VERSIONS
        queue_versions = VOLCANO_VERSIONS
    else:
        group_key, group, versions, queue_versions = KAI_GROUP_ANNOTATION, KAI, KAI_GROUP_VERSIONS, KAI_QUEUE_VERSIONS
    name = str(annotations.get(group_key) or "")
    # Volcano's annotation is its own; KAI's ``pod-group-name`` is generic, so its scheduler must be named too
    if not name or (system == "kai" and scheduler != "kai-scheduler"):
        return None
    out = GangFacts(system=system, group_name=name)
    version = await _version(kube, group, versions)
    if not version:
        out.installed = False
        return out
    ns = str(meta.get("namespace") or "")
    out.pod_group = await _get(kube, group, version, "podgroups", name, ns)
    if out.pod_group is not None:
        out.events = await kube.list_events(ns, field_selector=f"involvedObject.name={name}")
    queue = str(((out.pod_group or {}).get("spec") or {}).get("queue") or "")
    if system == "kai" and not queue:
        queue = _label([pod], KAI_QUEUE_LABELS[0]) or _label([pod], KAI_QUEUE_LABELS[1])
    if system == "volcano" and not queue and out.pod_group is not None:
        queue = "default"
    out.queue_name = queue
    queue_version = await _version(kube, group, queue_versions)
    if queue and queue_version:
        out.queue = await _get(kube, group, queue_version, "queues", queue)
        if system == "kai":
            await _parents(kube, out, group, queue_version)
    pods = await kube.list_pods(ns)
    out.pods = [p for p in pods if (meta_of(p).get("annotations") or {}).get(group_key) == name]
    return out


async def _dra(facts: Facts, kube: KubeReads) -> DraFacts | None:
    pod = facts.target.pod
    if pod is None or not pod_claims(pod):
        return None
    out = DraFacts(version=await _version(kube, DRA, DRA_VERSIONS))
    if not out.version:
        return out
    ns = str(meta_of(pod).get("namespace") or "")
    for claim in pod_claims(pod):
        if claim.claim:
            found = await _get(kube, DRA, out.version, "resourceclaims", claim.claim, ns)
            if found is not None:
                out.claims[claim.claim] = found
    classes = await kube.list_custom(DRA, out.version, "deviceclasses")
    out.device_classes = {str(meta_of(c).get("name")): c for c in classes}
    out.slices = await kube.list_custom(DRA, out.version, "resourceslices")
    out.all_claims = await kube.list_custom(DRA, out.version, "resourceclaims")
    await _reservations(kube, out, own=set(out.claims))
    await _plugins(kube, out)
    return out


async def _plugins(kube: KubeReads, out: DraFacts) -> None:
    """The DRA drivers' kubelet-plugin DaemonSets and their pods: a claim is prepared, and a node's
    devices published, only by the plugin pod on that node."""
    try:
        out.plugin_sets = [ds for ds in await kube.list_daemonsets() if is_plugin_daemonset(ds)]
        for ds in out.plugin_sets:
            meta = meta_of(ds)
            selector = selector_string((ds.get("spec") or {}).get("selector"))
            ns = str(meta.get("namespace") or "")
            pods = await kube.list_pods(ns, label_selector=selector) if selector else []
            out.plugin_pods[f"{ns}/{meta.get('name')}"] = pods
    except KubeApiError as exc:
        # the claims' story stands without them; only the plugin's state is not concluded
        out.plugin_sets, out.plugin_pods, out.plugins_unread = [], {}, exc.user_message


async def _reservations(kube: KubeReads, out: DraFacts, own: set[str]) -> None:
    """Which allocated claims are reserved for pods that are gone: such a claim keeps its devices
    from everyone until the resourceclaim controller (kube-controller-manager) drops the entry."""
    reads: list[tuple[str, str, str, str]] = []
    for claim in out.all_claims:
        meta = meta_of(claim)
        if not is_allocated(claim) or str(meta.get("name")) in own:
            continue
        ns = str(meta.get("namespace") or "")
        reads += [(f"{ns}/{meta.get('name')}", ns, name, uid) for name, uid in reserving_pods(claim)]

    async def gone(ns: str, name: str, uid: str) -> bool | str:
        try:
            pod = await kube.get_object("Pod", name, ns)
        except NotFoundError:
            return True
        except KubeApiError as exc:
            return exc.user_message
        return bool(uid) and str(meta_of(pod).get("uid") or "") != uid

    answers = await asyncio.gather(*(gone(ns, name, uid) for _, ns, name, uid in reads[:MAX_RESERVATION_READS]))
    for (key, _, name, _), answer in zip(reads, answers, strict=False):
        if isinstance(answer, str):
            out.unchecked_reservations[key] = answer
        elif answer:
            out.gone_reservations.setdefault(key, []).append(name)
    for key, *_ in reads[MAX_RESERVATION_READS:]:
        out.unchecked_reservations.setdefault(key, "not read (too many reservations to check)")


async def queues(facts: Facts, src: Sources) -> None:
    """Fill ``facts.queues`` for the target: nothing is read for a system the target does not use."""
    out = QueueFacts()
    facts.put("queues", out)
    if not facts.target.kind or not facts.target.namespace_exists:
        return
    out.kueue = await _kueue(facts, src.kube)
    out.volcano = await _gang(facts, src.kube, "volcano")
    out.kai = await _gang(facts, src.kube, "kai")
    out.dra = await _dra(facts, src.kube)


async def dra_inventory(facts: Facts, src: Sources) -> None:
    """Every ResourceSlice and ResourceClaim, for node-status's DRA devices; nothing read (beyond
    the cached discovery) where resource.k8s.io is not served."""
    out = DraFacts(version=await _version(src.kube, DRA, DRA_VERSIONS))
    facts.put("dra_inventory", out)
    if out.version:
        out.slices = await src.kube.list_custom(DRA, out.version, "resourceslices")
        out.all_claims = await src.kube.list_custom(DRA, out.version, "resourceclaims")

