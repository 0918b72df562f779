"""A workload Kueue holds: why its Workload is not admitted, and what would admit it.

A Job labelled ``kueue.x-k8s.io/queue-name`` is created suspended and has no pod until Kueue
admits its Workload into a ClusterQueue, so nothing the scheduler or the kubelet says explains
it. The story is in Kueue's objects: the Workload's QuotaReserved/Admitted/Evicted conditions and
its pending message, the LocalQueue, and the ClusterQueue's quota per flavor and resource, its
cohort (borrowing), its stop policy. One finding says which quota is short, how much is used and
by which admitted workloads, whether borrowing could help, and what would admit it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import NotRequired, TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.facts import Facts
from bot.engine.queue_facts import KueueFacts
from bot.kube import objects
from bot.kube.batch_workloads import display, suspended
from bot.kube.kueue import (
    Shortfall,
    cohort_lendable,
    cohort_of,
    condition,
    is_true,
    name_of,
    quota_rows,
    shortfalls,
    workload_requests,
    workload_usage,
)
from bot.kube.objects import Obj, meta_of, owner_refs_of, uid_of
from bot.kube.quota import fmt_quantity
from bot.kube.resources import quantity_or_none


class KueueBase(TypedDict):
    """What every KUEUE_* finding names: the target, its namespace and queues."""

    ref: str
    namespace: str
    queue: str
    cluster_queue: NotRequired[str]


class _KueueWorkload(KueueBase):
    name: str


class KueueNotAdmitted(_KueueWorkload):
    what: str
    admit: str


class KueueEvicted(_KueueWorkload):
    reason: str
    message: str


class KueueNamed(KueueBase):
    name: str


class KueueStopped(KueueNamed):
    value: str
    what: str


class KueueAdmitted(KueueNamed):
    what: str


KUEUE_NOT_INSTALLED = Code("KUEUE_NOT_INSTALLED", KueueBase)
KUEUE_QUEUE_MISSING = Code("KUEUE_QUEUE_MISSING", KueueNamed)
KUEUE_CLUSTERQUEUE_STOPPED = Code("KUEUE_CLUSTERQUEUE_STOPPED", KueueStopped)
KUEUE_WORKLOAD_MISSING = Code("KUEUE_WORKLOAD_MISSING", KueueBase)
KUEUE_NOT_ADMITTED = Code("KUEUE_NOT_ADMITTED", KueueNotAdmitted)
KUEUE_EVICTED = Code("KUEUE_EVICTED", KueueEvicted)
KUEUE_ADMITTED = Code("KUEUE_ADMITTED", KueueAdmitted)


class KueueStillSuspended(KueueNamed):
    #: the suspended object's name alone, for grepping the controller's log
    workload: str


KUEUE_ADMITTED_STILL_SUSPENDED = Code("KUEUE_ADMITTED_STILL_SUSPENDED", KueueStillSuspended)

MAX_HOLDERS = 6


def _subject(facts: Facts) -> tuple[str, str]:
    """(subject, what the user reads: ``job/train``)."""
    t = facts.target
    obj = t.workload or t.pod or {}
    kind = display(obj, t.kind)
    name = str(meta_of(obj).get("name") or t.name)
    return f"{kind}/{t.namespace}/{name}", f"{kind}/{name}"


def _suspended(facts: Facts) -> bool:
    t = facts.target
    if suspended(t.workload):  # spec.suspend, or an MPIJob's spec.runPolicy.suspend
        return True
    gates = ((t.pod or {}).get("spec") or {}).get("schedulingGates") or []
    return any(str(g.get("name", "")).startswith("kueue.x-k8s.io/") for g in gates)


def _holders(k: KueueFacts, flavor: str, resource: str) -> list[tuple[str, Decimal]]:
    users = [(name_of(w), workload_usage(w, flavor, resource)) for w in k.admitted]
    return sorted([u for u in users if u[1] > 0], key=lambda u: -u[1])


def _quota_story(k: KueueFacts, short: Shortfall, needs: dict[str, Decimal]) -> tuple[str, str, list[str]]:
    """(what is short, what would admit it, evidence lines) for one flavor/resource shortfall."""
    cq = name_of(k.cluster_queue)
    row = quota_rows(k.cluster_queue).get((short.flavor, short.resource))
    res, flavor = short.resource, short.flavor
    fmt = lambda v: fmt_quantity(res, v)  # noqa: E731 - one formatter for this resource
    asks = needs.get(res)
    evidence = [f"Kueue: {short.text}"]
    if short.kind == "not_covered":
        what = f"ClusterQueue {cq} has no quota for {res} at all"
        admit = f"add {res} to a resource group (coveredResources and a nominalQuota) of ClusterQueue {cq}"
        return what, admit, evidence
    if row is None:
        return f"{res} in flavor {flavor} is short in ClusterQueue {cq}", "free or add quota there", evidence
    holders = _holders(k, flavor, res)
    held = ", ".join(f"{n} ({fmt(v)})" for n, v in holders[:MAX_HOLDERS]) or "no admitted workload gpubot read"
    evidence.append(
        f"ClusterQueue {cq} flavor {flavor} {res}: nominal {fmt(row.nominal)}, reserved {fmt(row.used)}"
        + (f" ({fmt(row.borrowed)} borrowed)" if row.borrowed else "")
        + (f", borrowingLimit {fmt(row.borrowing_limit)}" if row.borrowing_limit is not None else "")
        + (f", lendingLimit {fmt(row.lending_limit)}" if row.lending_limit is not None else "")
    )
    if short.kind == "over_max":
        what = (
            f"it asks {short.request} {res} in flavor {flavor}, more than ClusterQueue {cq} can ever give "
            f"({short.maximum}: nominal plus what it may borrow)"
        )
        admit = f"ask for at most {short.maximum} {res}, or raise {cq}'s nominalQuota/borrowingLimit for {res}"
        return what, admit, evidence
    if short.kind == "borrow_limit":
        what = (f"ClusterQueue {cq} would have to borrow more {res} in flavor {flavor} than its borrowingLimit "
                f"({fmt(row.borrowing_limit) if row.borrowing_limit is not None else '?'}) allows")
        return what, f"workloads borrowing in {cq} finishing, or a higher borrowingLimit for {res}", evidence
    more = quantity_or_none(short.more) or ZERO_D
    cohort = cohort_of(k.cluster_queue)
    if not cohort:
        borrow = "cannot borrow (no cohort)"
    elif row.borrowing_limit is not None and row.borrowing_limit <= row.borrowed:
        borrow = f"borrowingLimit {fmt(row.borrowing_limit)} used up"
    else:
        borrow = f"cohort {cohort} can lend {fmt(cohort_lendable(k.cohort_queues, flavor, res))}"
    evidence.append(f"  {res} in {flavor} is held by: {held}")
    if asks is not None:
        evidence.append(f"  the workload asks {fmt(asks)} {res} in all")
    what = f"{cq} has {fmt(row.free)} of {fmt(row.nominal)} {res} free in {flavor}, needs {short.more} more, {borrow}"
    first = holders[0][0] if holders else "the admitted workloads"
    admit = (
        f"{first} finishing, or {cq}'s nominalQuota for {res} in {flavor} raised to "
        f"{fmt(row.used + more)}" + ("" if cohort else ", or a cohort with unused quota to borrow")
    )
    return what, admit, evidence


ZERO_D = Decimal(0)


def _not_admitted(facts: Facts, k: KueueFacts, subject: str, ref: str) -> Iterator[Detection]:
    wl = k.workload or {}
    cq = name_of(k.cluster_queue)
    ns = facts.target.namespace
    evicted = condition(wl, "Evicted")
    wl_name = (objects.name_of(wl) or "?")
    base: _KueueWorkload = {"ref": ref, "namespace": ns, "name": wl_name, "queue": k.queue_name, "cluster_queue": cq}
    if evicted is not None and evicted.get("status") == "True":
        yield KUEUE_EVICTED.detect(
            subject,
            {
                "reason": str(evicted.get("reason") or "?"),
                "message": str(evicted.get("message") or ""),
                **base,
            },
            evidence=[f"Workload {name_of(wl)} Evicted: {evicted.get('reason')}: {evicted.get('message')}",
                      *_check_lines(wl)],
        )
        return
    if is_true(wl, "QuotaReserved"):
        admitted = condition(wl, "Admitted") or {}
        checks = ((wl.get("status") or {}).get("admissionChecks")) or []
        lines = _check_lines(wl)
        yield KUEUE_NOT_ADMITTED.detect(
            subject,
            {
                "what": f"quota is reserved in {cq} but admission checks have not passed: "
            + (", ".join(f"{c.get('name')} {c.get('state')}" for c in checks) or str(admitted.get("message") or "")),
                "admit": "the admission checks (for a ProvisioningRequest: the nodes it asks for) to be Ready",
                **base,
            },
            role="checks",
            evidence=lines or [f"Admitted: {admitted.get('reason')}: {admitted.get('message')}"],
        )
        return
    reserved = condition(wl, "QuotaReserved") or {}
    message = str(reserved.get("message") or "")
    needs = workload_requests(wl)
    found = shortfalls(message)
    evidence = [f"Workload {name_of(wl)} QuotaReserved=False ({reserved.get('reason') or 'no reason yet'}): "
                f"{message or 'Kueue has not said why yet'}"]
    if found:
        what, admit, lines = _quota_story(k, found[0], needs)
        evidence += lines[1:]
        for more in found[1:3]:
            evidence += _quota_story(k, more, needs)[2][1:]
        role = "over_max" if found[0].kind == "over_max" else "quota"
    else:
        what = message or "Kueue has not given a reason yet (is the kueue-controller-manager running?)"
        admit = "what the message names"
        role = "other"
    status = (k.cluster_queue or {}).get("status") or {}
    policy = ((k.cluster_queue or {}).get("spec") or {}).get("preemption") or {}
    preemption = ", ".join(f"{key}={value}" for key, value in sorted(policy.items()) if isinstance(value, str))
    evidence.append(
        f"ClusterQueue {cq}: {status.get('pendingWorkloads', '?')} pending, "
        f"{status.get('admittedWorkloads', '?')} admitted; preemption {preemption or 'none'}"
    )
    yield KUEUE_NOT_ADMITTED.detect(subject, {"what": what, "admit": admit, **base}, role=role, evidence=evidence)


def run(facts: Facts) -> Iterator[Detection]:
    """KUEUE_* for a target Kueue manages (a queue-name label); nothing for any other target."""
    k = facts.queues.kueue
    if k is None:
        return
    subject, ref = _subject(facts)
    ns = facts.target.namespace
    base: KueueBase = {"ref": ref, "namespace": ns, "queue": k.queue_name}
    if k.workload is not None and is_true(k.workload, "Admitted") and not is_true(k.workload, "Evicted"):
        held = _still_suspended(facts, k.workload)
        if held is not None:
            yield KUEUE_ADMITTED_STILL_SUSPENDED.detect(
                subject,
                {"name": held, "workload": held.partition("/")[2], **base, "cluster_queue": _admitted_in(k.workload)},
                evidence=[*_admitted(k, subject, base).evidence, f"{held}: spec.suspend is still true"],
            )
            return
        # admitted: the pods' own story (scheduler, kubelet) is the one to tell; this is context
        yield _admitted(k, subject, base)
        return
    if not k.installed:
        if _suspended(facts):
            yield KUEUE_NOT_INSTALLED.detect(
                subject,
                {**base},
                evidence=[f"label kueue.x-k8s.io/queue-name={k.queue_name}", "the API serves no kueue.x-k8s.io group"],
            )
        return
    if k.local_queue is None:
        yield KUEUE_QUEUE_MISSING.detect(
            subject,
            {
                "name": k.queue_name,
                **base,
            },
            role="local",
            evidence=[f"LocalQueue {ns}/{k.queue_name} does not exist", *_workload_line(k)],
        )
        return
    cq_name = str((k.local_queue.get("spec") or {}).get("clusterQueue") or "")
    if k.cluster_queue is None:
        yield KUEUE_QUEUE_MISSING.detect(
            subject,
            {
                "name": cq_name,
                **base,
            },
            role="cluster",
            evidence=[f"LocalQueue {ns}/{k.queue_name} points at ClusterQueue {cq_name}, which does not exist",
                      *_workload_line(k)],
        )
        return
    base["cluster_queue"] = cq_name
    stopped = [(f"LocalQueue {ns}/{k.queue_name}", k.local_queue), (f"ClusterQueue {cq_name}", k.cluster_queue)]
    for label, obj in stopped:
        policy = str((obj.get("spec") or {}).get("stopPolicy") or "None")
        if policy != "None":
            yield KUEUE_CLUSTERQUEUE_STOPPED.detect(
                subject,
                {
                    "name": label,
                    "value": policy,
                    "what": f"stopPolicy {policy}",
                    **base,
                },
                role="stopped",
                evidence=[f"{label}: spec.stopPolicy {policy}"],
            )
            return
    active = condition(k.cluster_queue, "Active")
    if active is not None and active.get("status") != "True":
        yield KUEUE_CLUSTERQUEUE_STOPPED.detect(
            subject,
            {
                "name": f"ClusterQueue {cq_name}",
                "value": str(active.get("reason") or ""),
                "what": str(active.get("message") or "inactive"),
                **base,
            },
            role="inactive",
            evidence=[f"ClusterQueue {cq_name} Active=False: {active.get('reason')}: {active.get('message')}"],
        )
        return
    if k.workload is None:
        if _suspended(facts):
            yield KUEUE_WORKLOAD_MISSING.detect(
                subject,
                {**base},
                evidence=[f"{ref} is suspended with queue {k.queue_name}, and no Workload is owned by it"],
            )
        return
    yield from _not_admitted(facts, k, subject, ref)


#: how long after admission a job may still be suspended before it is a problem (Kueue unsuspends
#: it within seconds; a slow API server or a busy controller takes a little longer)
UNSUSPEND_GRACE_S = 120


def _admitted_in(workload: Obj) -> str:
    return str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "?")


def _still_suspended(facts: Facts, workload: Obj) -> str | None:
    """``kind/name`` of the object Kueue manages for an admitted Workload when it is still
    suspended well after admission (Kueue's job reconciler should have unsuspended it)."""
    owner = next((o for o in owner_refs_of(workload) if o.get("controller")),
                 None)
    chain: list[Obj] = []  # the target and its owners, nearest first, each once
    for obj in (facts.target.workload, *facts.target.owners):
        if obj is not None and all(obj is not seen for seen in chain):
            chain.append(obj)
    uids = [uid_of(o) for o in chain]
    if owner is None or str(owner.get("uid") or "") not in uids:
        return None
    # the managed job itself, what lies between it and the target, or what it made (a RayJob's RayCluster)
    below = [*facts.target.made, *chain[: uids.index(str(owner.get("uid"))) + 1]]
    held = next((o for o in below if suspended(o)), None)
    if held is None:
        return None
    since = str((condition(workload, "Admitted") or {}).get("lastTransitionTime") or "")
    try:
        admitted_at = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return None
    if (datetime.now(UTC) - admitted_at).total_seconds() < UNSUSPEND_GRACE_S:
        return None
    return f"{display(held)}/{(held.get('metadata') or {}).get('name')}"


def _admitted(k: KueueFacts, subject: str, base: KueueBase) -> Detection:
    wl = k.workload or {}
    admission = (wl.get("status") or {}).get("admission") or {}
    cq = str(admission.get("clusterQueue") or "?")
    rows = quota_rows(k.cluster_queue)
    borrowed = [
        f"{fmt_quantity(r.resource, r.borrowed)} {r.resource} in {r.flavor}" for r in rows.values() if r.borrowed
    ]
    cohort = cohort_of(k.cluster_queue)
    what = "within its nominal quota"
    if borrowed and cohort:
        what = f"borrowing {', '.join(borrowed)} from cohort {cohort}"
    evidence = [f"Workload {name_of(wl)}: Admitted=True into ClusterQueue {cq}"]
    for ps in admission.get("podSetAssignments") or []:
        usage = ", ".join(f"{r} {v}" for r, v in sorted((ps.get("resourceUsage") or {}).items()))
        flavors = ", ".join(sorted({str(f) for f in (ps.get("flavors") or {}).values()}))
        evidence.append(f"  pod set {ps.get('name')}: {usage} (flavor {flavors})")
    return KUEUE_ADMITTED.detect(
        subject,
        {
            "name": (objects.name_of(wl) or "?"),
            "cluster_queue": cq,
            "what": what,
            **base,
        },
        evidence=evidence,
    )


def _check_lines(workload: Obj) -> list[str]:
    checks = ((workload.get("status") or {}).get("admissionChecks")) or []
    return [f"admission check {c.get('name')}: {c.get('state')} {c.get('message') or ''}".strip() for c in checks]


def _workload_line(k: KueueFacts) -> list[str]:
    if k.workload is None:
        return []
    cond = condition(k.workload, "QuotaReserved") or {}
    return [f"Workload {name_of(k.workload)}: {cond.get('reason') or ''} {cond.get('message') or ''}".strip()]


CHECK = Check(
    name="queue.kueue",
    reads=("target", "queues"),
    emits=(
        KUEUE_NOT_INSTALLED,
        KUEUE_QUEUE_MISSING,
        KUEUE_CLUSTERQUEUE_STOPPED,
        KUEUE_WORKLOAD_MISSING,
        KUEUE_NOT_ADMITTED,
        KUEUE_EVICTED,
        KUEUE_ADMITTED,
        KUEUE_ADMITTED_STILL_SUSPENDED,
    ),
    run=run,
)
