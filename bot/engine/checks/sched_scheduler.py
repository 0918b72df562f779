"""A waiting pod whose spec.schedulerName is not kube-scheduler's: name that scheduler.

Volcano, KAI, HAMi's scheduler and YuniKorn decide for the pods that name them and keep their
reasons in their own objects (PodGroups, Queues, applications) and logs, often without a
FailedScheduling event on the pod; a report that reads as if kube-scheduler had decided sends
the reader to the wrong place. The ``schedulers`` table of the runbook says, per scheduler, what
it is and which of its objects to read. Context (info) while another finding explains the pod;
the lead (``cause``) when the pod has no current scheduler event at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.objects import meta_of
from bot.kube.story import history_reason


class SchedNonDefaultScheduler(TypedDict):
    pod: str
    scheduler: str
    what: str
    look_at: str


SCHED_NON_DEFAULT_SCHEDULER = Code("SCHED_NON_DEFAULT_SCHEDULER", SchedNonDefaultScheduler)

DEFAULT = "default-scheduler"
#: pod labels and annotations that name the scheduler's own objects for the pod
OBJECT_KEYS = ("scheduling.k8s.io/group-name", "volcano.sh/queue-name", "kai.scheduler/queue", "runai/queue",
               "pod-group-name", "queue", "yunikorn.apache.org/app-id", "applicationId",
               "yunikorn.apache.org/queue", "hami.io/vgpu-node", "hami.io/bind-phase")


def _row(facts: Facts, scheduler: str) -> Mapping[str, Any]:
    for row in facts.table("schedulers"):
        if str(row.get("match", "")).lower() in scheduler.lower():
            return row
    return {}


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_NON_DEFAULT_SCHEDULER for a pod no node was chosen for by a scheduler of its own."""
    pod = facts.pending_pod
    if pod is None:
        return
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or DEFAULT)
    if scheduler == DEFAULT:
        return
    row = _row(facts, scheduler)
    meta = meta_of(pod)
    marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    evidence = [f"spec.schedulerName: {scheduler}"]
    evidence += [f"{k}: {marks[k]}" for k in OBJECT_KEYS if k in marks]
    events = facts.events
    own = [e for e in [*events.pod, *events.owners]
           if scheduler.lower() in str((e.get("source") or {}).get("component") or e.get("reportingComponent")
                                       or "").lower()
           or str(e.get("reason") or "").startswith(("PodGroup", "Unschedulable", "FilteringFailed"))]
    for e in own[:4]:
        obj = e.get("involvedObject") or {}
        earlier = "earlier " if history_reason(e, events.subject, events.cutoff) else ""
        evidence.append(f"{earlier}event {obj.get('kind', '?')}/{obj.get('name', '?')} {e.get('reason', '')}: "
                        f"{str(e.get('message') or '')[:300]}")
    if not events.scheduling:
        evidence.append("FailedScheduling events from a scheduler: none current")
    yield SCHED_NON_DEFAULT_SCHEDULER.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "scheduler": scheduler,
            "what": str(row.get("product") or "a scheduler other than kube-scheduler"),
            "look_at": str(
                row.get("look_at") or "Read that scheduler's logs and its own objects for this pod."
            ).replace("NAMESPACE", str(meta.get("namespace") or "NAMESPACE")),
        },
        role="" if events.scheduling else "cause",
        evidence=evidence,
    )


CHECK = Check(name="sched.scheduler", reads=("pending_pod", "events"), emits=(SCHED_NON_DEFAULT_SCHEDULER,),
              run=run, tables=("schedulers",))
