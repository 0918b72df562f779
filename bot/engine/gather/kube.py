"""Loaders of Kubernetes facts: the target and its owners and events, namespaces, nodes, the
GPU-stack components and the pods on GPU nodes. Reads only, through the ``KubeReads`` facade."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

from bot.engine.facts import EventFacts, Facts, GpuComponents, QuotaFacts, TargetFacts, component_pods
from bot.engine.gather.sources import Sources
from bot.errors import GpubotError, KubeApiError, NotFoundError
from bot.kube.batch_workloads import BY_KEY, BatchKind, kind_of, pod_owner_name
from bot.kube.gpu import COMPONENT_HINTS, is_gpu_component, marks_gpu
from bot.kube.node_map import NodeMap
from bot.kube.objects import Obj, meta_of, name_of, namespace_of, owner_refs_of, uid_of
from bot.kube.pod_affinity import required_pod_terms
from bot.kube.pod_status import pod_ready
from bot.kube.selectors import selector_string
from bot.kube.story import needs_story
from bot.kube.topology_spread import hard_constraints
from bot.probes.kube import KubeReads
from bot.report import Unreadable

T = TypeVar("T")

#: pods a quota still counts and a pod (anti-)affinity can be about: not Succeeded/Failed. A field
#: selector also makes the watch-fed cache pass the list to the API, which serves whole objects.
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
#: controller kinds whose ownerReferences we follow up from a pod
OWNER_KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "Job", "DaemonSet")
#: the API each of those kinds is read from
OWNER_API = {"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
             "Job": "batch/v1"}
#: GPU-stack pods that do not run whose events are read (one list call each)
MAX_COMPONENT_STORIES = 12


async def _every(facts: Facts, fact: str, jobs: Iterable[Awaitable[T]]) -> list[T]:
    """Every job's result; when reads fail, each failed read is recorded against ``fact`` (so the
    report names all of them, not only the first) and the first failure is raised."""
    results = await asyncio.gather(*jobs, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    for err in errors:
        if isinstance(err, KubeApiError):
            facts.cannot_read(fact, Unreadable.of(err, fact))
    if errors:
        raise errors[0]
    return [r for r in results if not isinstance(r, BaseException)]


def _owned_by(obj: Obj, owner: Obj) -> bool:
    uid = meta_of(owner).get("uid")
    return any(o.get("uid") == uid for o in owner_refs_of(obj))


def _pod_priority(pod: Obj) -> tuple[int, str]:
    """The most interesting pod of a workload first: pending, then not ready, then the rest."""
    phase = (pod.get("status") or {}).get("phase")
    rank = 0 if phase == "Pending" else 1 if not pod_ready(pod) else 2
    return rank, name_of(pod)


async def _owner_chain(facts: Facts, kube: KubeReads, obj: Obj) -> list[Obj]:
    """Follow controller ownerReferences (Pod → ReplicaSet → Deployment, Pod → Job, …).

    An owner that is gone (404) ends the chain: that is an answer. One that could not be read
    leaves the target known only in part, so the checks that rest on it do not conclude.
    """
    chain: list[Obj] = []
    current = obj
    ns = meta_of(obj).get("namespace", "")
    for _ in range(4):
        refs = [r for r in owner_refs_of(current) if r.get("controller")]
        batch = kind_of(refs[0]) if refs else None
        if batch is None and (not refs or refs[0].get("kind") not in OWNER_KINDS):
            break
        if batch is None and str(refs[0].get("apiVersion") or OWNER_API[refs[0]["kind"]]) != OWNER_API[refs[0]["kind"]]:
            break  # same kind name, another API (a Volcano batch.volcano.sh Job is no batch/v1 Job)
        try:
            if batch is not None:  # a JobSet's Job, a RayJob's RayCluster, an MPIJob's or a vcjob's pods
                current = await _read_batch(kube, batch, str(refs[0]["name"]), ns)
            else:
                current = await kube.get_object(refs[0]["kind"], refs[0]["name"], ns)
        except NotFoundError:
            break
        except KubeApiError as exc:
            facts.skip("the owner chain", exc.user_message)
            facts.cannot_read("target", Unreadable.of(exc))
            break
        chain.append(current)
    return chain


async def _read_batch(kube: KubeReads, batch: BatchKind, name: str, namespace: str) -> Obj:
    """A custom batch workload in the newest version the server serves; NotFoundError when it,
    or its API, does not exist."""
    for version in batch.versions:
        if await kube.served(batch.group, version):
            return await kube.get_custom(batch.group, version, batch.plural, name, namespace)
    return await kube.get_custom(batch.group, batch.versions[0], batch.plural, name, namespace)


async def _batch_pods(kube: KubeReads, batch: BatchKind, workload: Obj, namespace: str) -> list[Obj]:
    """The pods a custom batch workload made, by the label its controller puts on them (a JobSet's
    pods belong to its Jobs, so ownership would miss them); none before it makes any."""
    value = pod_owner_name(batch, workload)
    return await kube.list_pods(namespace, label_selector=f"{batch.pod_label}={value}") if value else []


async def _batch_children(kube: KubeReads, batch: BatchKind, workload: Obj, namespace: str) -> list[Obj]:
    """A RayJob's RayCluster (``status.rayClusterName``): it, not the RayJob, owns the pods and can
    stay suspended after Kueue admits the RayJob. None for the other kinds, or before it exists."""
    name = str((workload.get("status") or {}).get("rayClusterName") or "")
    if batch.key != "RayJob" or not name:
        return []
    try:
        return [await _read_batch(kube, BY_KEY["RayCluster"], name, namespace)]
    except NotFoundError:
        return []


async def _suggest(facts: Facts, kube: KubeReads, t: TargetFacts) -> None:
    """Close names, so a typo gets 'did you mean'; without them the answer stands, said to be
    incomplete."""
    try:
        await _close_names(kube, t)
    except KubeApiError as exc:
        facts.skip("close names", exc.user_message)
        facts.cannot_read("", Unreadable.of(exc))


async def _close_names(kube: KubeReads, t: TargetFacts) -> None:
    if not t.namespace_exists:
        names = [meta_of(n).get("name", "") for n in await kube.list_namespaces()]
        t.suggestions = difflib.get_close_matches(t.namespace, names, n=3, cutoff=0.5)
        return
    pods = await kube.list_pods(t.namespace)
    names = [meta_of(p).get("name", "") for p in pods]
    t.suggestions = difflib.get_close_matches(t.name, names, n=3, cutoff=0.5)


async def target(facts: Facts, src: Sources) -> None:
    """Resolve the pod or workload; on a miss, whether the namespace exists and close names."""
    inv, kube = facts.inv, src.kube
    t = TargetFacts(kind=inv.kind, name=inv.name, namespace=inv.namespace)
    facts.put("target", t)
    if not inv.kind:
        return  # node-status has no target
    batch = BY_KEY.get(inv.kind)
    # only a 404 says the object is absent; any other failure leaves it unknown (raised: the
    # gatherer marks the target unreadable and no check concludes from it)
    try:
        if inv.kind == "Pod":
            t.pod = await kube.get_object("Pod", inv.name, inv.namespace)
            t.pods = [t.pod]
            t.owners = await _owner_chain(facts, kube, t.pod)
            return
        if batch is not None:
            t.workload = await _read_batch(kube, batch, inv.name, inv.namespace)
        else:
            t.workload = await kube.get_object(inv.kind, inv.name, inv.namespace)
    except NotFoundError:
        try:
            await kube.get_object("Namespace", inv.namespace)
        except NotFoundError:
            t.namespace_exists = False
        except KubeApiError as exc:  # the object is absent either way; which of the two is not known
            facts.skip("the namespace", exc.user_message)
            facts.cannot_read("", Unreadable.of(exc))
        await _suggest(facts, kube, t)
        return
    workload = t.workload
    t.owners = [workload, *await _owner_chain(facts, kube, workload)]
    if batch is not None:
        t.made = await _batch_children(kube, batch, workload, inv.namespace)
        t.pods = await _batch_pods(kube, batch, workload, inv.namespace)
        t.pods.sort(key=_pod_priority)
        t.pod = t.pods[0] if t.pods else None
        return
    selector = selector_string((workload.get("spec") or {}).get("selector"))
    candidates = await kube.list_pods(inv.namespace, label_selector=selector) if selector else []
    if inv.kind == "Deployment":
        # Pods belong to the Deployment through its ReplicaSets; the selector already narrows them.
        # The ReplicaSets are where a webhook denial is recorded (FailedCreate), newest first.
        sets = await kube.list_replicasets(inv.namespace, label_selector=selector) if selector else []
        mine = [rs for rs in sets if _owned_by(rs, workload)]
        mine.sort(key=lambda rs: str(meta_of(rs).get("creationTimestamp", "")), reverse=True)
        t.owners = [workload, *mine[:3]]
        t.pods = candidates
    else:
        t.pods = [p for p in candidates if _owned_by(p, workload)] or candidates
    t.pods.sort(key=_pod_priority)
    t.pod = t.pods[0] if t.pods else None


async def events(facts: Facts, src: Sources) -> None:
    """Events of the pod and of its owners (FailedCreate of a webhook denial lives on the owner)."""
    t = facts.target
    out = EventFacts()
    facts.put("events", out)
    if not t.kind or not t.namespace_exists:
        return

    def about(obj: Obj) -> Any:
        name = meta_of(obj).get("name")
        return src.kube.list_events(t.namespace, field_selector=f"involvedObject.name={name}")

    jobs = ([about(t.pod)] if t.pod is not None else []) + [about(o) for o in t.owners]
    results = await _every(facts, "events", jobs)
    if t.pod is not None:
        out.pod, results = results[0], results[1:]
    out.owners = [e for batch in results for e in batch]


async def namespaces(facts: Facts, src: Sources) -> None:
    """Every namespace with its labels: the policy label and the System-vs-Tenant diff need them."""
    facts.put("namespaces", {meta_of(n).get("name", ""): n for n in await src.kube.list_namespaces()})


async def nodes(facts: Facts, src: Sources) -> None:
    """All nodes (taints, labels, capacity, conditions), as a ``NodeMap`` with its GPU marks: the
    watch-fed cache hands out one per change of its nodes; a plain reader's map is marked here,
    once, so the questions that follow (the candidates of every diagnosis of a ``pending``, the
    GPU nodes) walk the GPU nodes instead of every node (at 5,000 nodes, ~20 ms each)."""
    found = await src.kube.node_map()
    if not (isinstance(found, NodeMap) and found.mark is marks_gpu):
        found = NodeMap(found, [name for name, node in found.items() if marks_gpu(node)], marks_gpu)
    facts.put("nodes", found)


async def components(facts: Facts, src: Sources) -> None:
    """GPU-stack DaemonSets and Deployments (device plugins, qGPU, operators) and their pods."""
    daemonsets, deployments = await _every(
        facts, "components", [src.kube.list_daemonsets(), src.kube.list_deployments()]
    )
    controllers = [
        o
        for o in [*daemonsets, *deployments]
        if is_gpu_component(name_of(o), meta_of(o).get("labels"))
    ]

    # the watch-fed cache keeps the GPU-stack DaemonSets' pods whole (bot.probes.cache)
    batches = await _every(facts, "components", [src.kube.component_pods(c) for c in controllers])
    pods = [p for batch in batches for p in batch]
    if not controllers:
        # Some installs run bare pods: fall back to the well-known app labels.
        apps = ",".join(h for h in COMPONENT_HINTS if "qgpu" in h or "device-plugin" in h)
        pods = component_pods(await src.kube.list_pods(label_selector=f"app in ({apps})"))
    out = GpuComponents(controllers=controllers, pods=pods)
    # the events of GPU-stack pods that do not run (a sandbox the runtime refuses, an image pull):
    # their story is the plugin's or operator's finding; bounded, and only for the troubled ones
    troubled = [p for p in pods if needs_story(p)][:MAX_COMPONENT_STORIES]

    async def events_of(pod: Obj) -> list[Obj]:
        meta = meta_of(pod)
        found = await src.kube.list_events(str(meta.get("namespace") or ""),
                                           field_selector=f"involvedObject.name={meta.get('name')}")
        return [e for e in found if (e.get("involvedObject") or {}).get("kind", "Pod") == "Pod"]

    try:
        batches = await asyncio.gather(*(events_of(p) for p in troubled))
    except GpubotError as exc:
        facts.skip("events of GPU-stack pods that do not run", exc.user_message)
        batches = []
    for pod, batch in zip(troubled, batches, strict=False):
        out.events[uid_of(pod)] = batch
    facts.put("components", out)


async def quotas(facts: Facts, src: Sources) -> None:
    """The target namespace's ResourceQuotas; with one, the namespace's pods (who uses it)."""
    t = facts.target
    out = QuotaFacts()
    facts.put("quotas", out)
    if not t.kind or not t.namespace_exists:
        return
    out.quotas = await src.kube.list_resourcequotas(t.namespace)
    if out.quotas:
        out.pods = await src.kube.list_pods(t.namespace, field_selector=NON_TERMINAL)


async def peers(facts: Facts, src: Sources) -> None:
    """Pods the pending pod's required pod (anti-)affinity is about, with their labels.

    The pod's own namespace always (the default scope of a term, and where the pods whose own
    anti-affinity can refuse it usually live); the namespaces a term names; every namespace when
    a term has a namespaceSelector, narrowed by the term's label selector. A hard topology spread
    constraint counts the pod's own namespace, so it reads that namespace's pods too.
    """
    facts.put("peers", [])
    pod = facts.target.pod
    if pod is None or (pod.get("spec") or {}).get("nodeName"):
        return
    terms = required_pod_terms(pod)
    # the scheduler's newest message, only where the pod's own rules do not already say to read
    # peers: reading it sorts and dates every event of the pod (20,000 cost the loop 0.15 s), so
    # it is worked out in a worker thread (and kept there for the checks)
    if not terms and not hard_constraints(pod) and not await asyncio.to_thread(_anti_affinity_blamed, facts):
        return
    namespace = namespace_of(pod)
    jobs = [src.kube.list_pods(namespace, field_selector=NON_TERMINAL)]
    for term in terms:
        selector = selector_string(dict(term.selector)) if term.selector else ""
        scopes = [ns for ns in term.namespaces if ns != namespace]
        if term.namespace_selector is not None:
            scopes = [""]  # every namespace; the evaluator applies the namespace selector
        for scope in scopes:
            if selector:
                jobs.append(src.kube.list_pods(scope, label_selector=selector))
            else:
                jobs.append(src.kube.list_pods(scope, field_selector=NON_TERMINAL))
    seen: dict[tuple[str, str], Obj] = {}
    for batch in await _every(facts, "peers", jobs):
        for p in batch:
            meta = meta_of(p)
            seen.setdefault((str(meta.get("namespace", "")), str(meta.get("name", ""))), p)
    facts.put("peers", list(seen.values()))


def _anti_affinity_blamed(facts: Facts) -> bool:
    """Whether the scheduler's newest message blames the anti-affinity of pods already placed."""
    return any(r.category == "existing_anti_affinity" for msg in facts.events.scheduling[:1] for r in msg.reasons)


async def node_pods(facts: Facts, src: Sources) -> None:
    """Slim records of the pods bound to GPU nodes in scope (and to the target pod's node)."""
    names = set(facts.scope_nodes)
    pod = facts.target.pod
    if pod is not None and (pod.get("spec") or {}).get("nodeName"):
        names.add(str(pod["spec"]["nodeName"]))
    # The watch-fed cache (bot.probes.cache) answers from its node index without rebuilding dicts.
    def failed(err: KubeApiError) -> None:  # each failed read is named, as ``_every`` does
        facts.cannot_read("node_pods", Unreadable.of(err, "node_pods"))

    facts.put("node_pods", await src.kube.slim_pods_by_node(names, all_nodes=len(facts.nodes), failed=failed))
