"""The API server refuses to create the workload's pods: a LimitRange, Pod Security admission, a
missing service account. No pod exists to carry the reason; the controller's FailedCreate event
(or a ReplicaSet's ReplicaFailure condition, which outlives the event) does. Quota and webhook
refusals are QUOTA_EXCEEDED and SCHED_WEBHOOK_DENIED; a missing RuntimeClass is
RUNTIME_CLASS_MISSING.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._owner_refusals import owner_refusals, short_of_pods
from bot.engine.facts import Facts
from bot.kube.create_refusal import CreateRefusal, parse
from bot.kube.objects import labels_of
from bot.kube.workload import workload_status


class WorkloadCreateRefused(TypedDict):
    pod: str
    workload: str
    namespace: str
    rule: str
    meaning: str
    look_at: str
    message: str


WORKLOAD_CREATE_REFUSED = Code("WORKLOAD_CREATE_REFUSED", WorkloadCreateRefused)

PSA = "pod-security.kubernetes.io/"


def _refusals(facts: Facts) -> list[tuple[CreateRefusal, str, str]]:
    """(refusal, the object that recorded it, evidence line), newest first, one per kind."""
    return owner_refusals(facts, parse, lambda r: r.kind, width=900)


def _refuser(refusal: CreateRefusal, facts: Facts, namespace: str) -> tuple[str, list[str]]:
    """The object that refuses, in words, and what shows it."""
    if refusal.kind == "pod_security":
        labels = labels_of(facts.namespaces.get(namespace))
        psa = {k: v for k, v in labels.items() if k.startswith(PSA)}
        if psa:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(psa.items()))
            return f"namespace {namespace} label {PSA}enforce", [f"namespace {namespace}: {shown}"]
        return (f"the cluster's default Pod Security level (namespace {namespace} has no {PSA}enforce label)",
                [f"namespace {namespace} carries no {PSA}* label: the API server's AdmissionConfiguration "
                 "default applies"])
    if refusal.kind == "limit_range":
        return f"a LimitRange in namespace {namespace}", []
    if refusal.kind == "service_account":
        return f"the missing service account {refusal.name}", []
    return "the API server", []


def run(facts: Facts) -> Iterator[Detection]:
    """WORKLOAD_CREATE_REFUSED per kind of refusal, with the refusing object named."""
    t = facts.target
    if not t.kind or not t.namespace_exists or (t.pod is None and t.workload is None):
        return
    matters, role_base = short_of_pods(facts)
    if not matters:
        return
    workload = t.workload or (t.owners[-1] if t.owners else None)
    status = workload_status(workload) if workload is not None else None
    rows = {str(r.get("kind")): r for r in facts.table("create_refusals")}
    for refusal, who, line in _refusals(facts):
        refuser, more = _refuser(refusal, facts, t.namespace)
        row = rows.get(refusal.kind) or rows.get("other") or {}
        evidence = [line, *more]
        if status is not None:
            evidence.append(status.describe())
        yield WORKLOAD_CREATE_REFUSED.detect(
            f"{who.split('/')[0]}/{t.namespace}/{who.split('/', 1)[1]}",
            {
                "pod": f"{t.namespace}/{t.name}",
                "workload": who,
                "namespace": t.namespace,
                "rule": refuser,
                "meaning": str(row.get("meaning", "")),
                "look_at": str(row.get("look_at", "")).replace("NAMESPACE", t.namespace),
                "message": (f"{refusal.level}: " if refusal.level else "") + refusal.detail[:600].rstrip("."),
            },
            role=role_base or refusal.kind,
            evidence=evidence,
        )


CHECK = Check(
    name="workload.create_refused",
    reads=("target", "events", "namespaces"),
    emits=(WORKLOAD_CREATE_REFUSED,),
    run=run,
    tables=("create_refusals",),
)
