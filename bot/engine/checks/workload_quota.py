"""A ResourceQuota refuses the workload's pods: they are never created, so no pod says why.

The controller (ReplicaSet, Job, StatefulSet) records ``FailedCreate`` with the API server's
``exceeded quota`` text, and a Deployment or ReplicaSet keeps it in its ``ReplicaFailure``
condition after the event has expired. The finding shows the quota's used/hard beside what one
more pod asks, and which pods use it up. With no refusal left to read but a quota that one more
pod would overflow while the workload is short of pods, it is reported as inferred.

A workload that has every pod it wants, ready and up to date, is not reported: a full quota is
normal for a namespace that uses what it was given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._owner_refusals import owner_refusals, short_of_pods
from bot.engine.facts import Facts
from bot.kube.objects import Obj, meta_of, name_of
from bot.kube.quota import QuotaDenial, fmt_quantity, parse_quota_denial, quota_lines, quota_users
from bot.kube.workload import pod_template, workload_status


class QuotaExceeded(TypedDict):
    pod: str
    workload: str
    namespace: str
    quota: str
    resource: str
    what: str


QUOTA_EXCEEDED = Code("QUOTA_EXCEEDED", QuotaExceeded)

MAX_USERS = 12


def _kind_name(obj: Obj) -> str:
    return f"{str(obj.get('kind', 'object')).lower()}/{(obj.get('metadata') or {}).get('name', '?')}"


def _denials(facts: Facts) -> list[tuple[QuotaDenial, str]]:
    """Quota refusals on the owners, newest first, one per quota: (denial, evidence line)."""
    return [(denial, line) for denial, _, line in owner_refusals(facts, parse_quota_denial, lambda d: d.quota)]


def _what(denial: QuotaDenial) -> str:
    if denial.kind == "must_specify":
        return f"every pod must state {', '.join(denial.missing)} and this one does not"
    if denial.kind == "status_unknown":
        return "the quota controller has not computed its usage yet"
    return "; ".join(
        f"{r} {denial.used.get(r, '?')} of {denial.limited.get(r, '?')} used, "
        f"one more pod asks {denial.requested.get(r, '?')}"
        for r in denial.resources
    )


def _quota_evidence(quota: Obj, template: Obj | None, pods: Sequence[Obj], focus: Sequence[str]) -> list[str]:
    name = meta_of(quota).get("name", "?")
    lines = []
    # the resources the refusal is about first, then the rest of the quota
    for line in sorted(quota_lines(quota, template), key=lambda q: (q.resource not in focus, q.resource)):
        asks = f", one more pod asks {fmt_quantity(line.resource, line.asks)}" if line.asks else ""
        full = " (full)" if line.full else ""
        lines.append(f"quota {name}: {line.resource} {line.used} used of {line.hard}{asks}{full}")
    for resource in focus:
        users = quota_users(quota, resource, pods)
        for user in users[:MAX_USERS]:
            state = "Terminating" if user.terminating else user.phase
            where = f" on {user.node}" if user.node else ""
            lines.append(f"  uses {resource}: {user.name} {fmt_quantity(resource, user.amount)} ({state}{where})")
        if len(users) > MAX_USERS:
            lines.append(f"  ... and {len(users) - MAX_USERS} more pod(s)")
        if not users and pods:
            lines.append(f"  no live pod in the namespace uses {resource}: the quota's usage may be stale")
    return lines


def _workload(facts: Facts) -> Obj | None:
    """The controller whose pods the quota refuses: the asked workload, else the pod's owner."""
    t = facts.target
    if t.workload is not None:
        return t.workload
    return t.owners[-1] if t.owners else None


def run(facts: Facts) -> Iterator[Detection]:
    """QUOTA_EXCEEDED: from the refusal, or inferred from a full quota when the refusal expired."""
    t = facts.target
    if not t.kind or not t.namespace_exists or (t.pod is None and t.workload is None):
        return
    matters, role = short_of_pods(facts)  # "sibling": the asked pod exists, so the quota admitted it
    if not matters:
        return
    workload = _workload(facts)
    status = workload_status(workload) if workload is not None else None
    template = pod_template(workload) if workload is not None else None
    quotas = {name_of(q): q for q in facts.quotas.quotas}
    where = _kind_name(workload) if workload is not None else f"{t.kind.lower()}/{t.name}"
    subject = f"{where.split('/')[0]}/{t.namespace}/{where.split('/', 1)[1]}"
    state = [status.describe()] if status is not None else []
    denials = _denials(facts)
    for denial, line in denials:
        quota = quotas.get(denial.quota)
        focus = denial.resources if denial.kind == "exceeded" else []
        evidence = [line, *state]
        if quota is not None:
            evidence += _quota_evidence(quota, template, facts.quotas.pods, focus)
        else:
            evidence.append(
                f"quota {denial.quota} could not be read in namespace {t.namespace} (deleted since, or no "
                "permission to list resourcequotas): its current usage is not shown"
            )
        resource = ", ".join(denial.resources) or "?"
        yield QUOTA_EXCEEDED.detect(
            subject,
            {
                "pod": f"{t.namespace}/{t.name}",
                "workload": where,
                "namespace": t.namespace,
                "quota": denial.quota,
                "resource": resource,
                "what": _what(denial),
            },
            role=role,
            evidence=evidence,
        )
    if denials or status is None or status.current >= status.desired or template is None:
        return
    for name, quota in sorted(quotas.items()):
        full = [line for line in quota_lines(quota, template) if line.full]
        if not full:
            continue
        what = "; ".join(
            f"{line.resource} {line.used} of {line.hard} used, "
            f"one more pod asks {fmt_quantity(line.resource, line.asks)}"
            for line in full
        )
        evidence = [
            "no FailedCreate event or ReplicaFailure condition is left to quote (events expire after about an hour)",
            *state,
            *_quota_evidence(quota, template, facts.quotas.pods, [line.resource for line in full]),
        ]
        yield QUOTA_EXCEEDED.detect(
            subject,
            {
                "pod": f"{t.namespace}/{t.name}",
                "workload": where,
                "namespace": t.namespace,
                "quota": name,
                "resource": ", ".join(line.resource for line in full),
                "what": what,
            },
            role=role or "inferred",
            evidence=evidence,
        )


CHECK = Check(name="workload.quota", reads=("target", "events", "quotas"), emits=(QUOTA_EXCEEDED,), run=run)
