"""A pending pod the scheduler has said nothing about: wrong schedulerName, or no scheduler running.

Any finding that explains the pod makes this one redundant; the catalogue says which
(``unless:``), so this check does not look at what other checks found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.objects import meta_of


class SchedNoEvents(TypedDict):
    pod: str


SCHED_NO_EVENTS = Code("SCHED_NO_EVENTS", SchedNoEvents)


class SchedEventsStale(TypedDict):
    pod: str
    pod_name: str
    namespace: str
    why: str


SCHED_EVENTS_STALE = Code("SCHED_EVENTS_STALE", SchedEventsStale)


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_NO_EVENTS with the scheduler the pod waits for; SCHED_EVENTS_STALE when its only
    words predate a change on the nodes (history, never the current cause)."""
    pod = facts.pending_pod
    if pod is None or facts.events.scheduling:
        return
    if (pod.get("spec") or {}).get("schedulingGates"):
        return  # a gated pod is not offered to any scheduler: its silence is expected (the gate's owner says why)
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
    created = str(meta_of(pod).get("creationTimestamp") or "?")
    history = facts.events.scheduling_history
    if history:
        newest, why = history[0]
        meta = meta_of(pod)
        since = str(newest.get("lastTimestamp") or newest.get("eventTime") or newest.get("firstTimestamp") or "?")
        yield SCHED_EVENTS_STALE.detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "pod_name": str(meta.get("name") or ""),
                "namespace": str(meta.get("namespace") or ""),
                "why": why.removeprefix("before ").split(";")[0],
            },
            evidence=[f"earlier ({since}, {why}): {str(newest.get('message') or newest.get('note') or '')[:1000]}",
                      f"spec.schedulerName: {scheduler}", "FailedScheduling events since: none"],
        )
        return
    yield SCHED_NO_EVENTS.detect(
        pod_subject(pod),
        {"pod": pod_ref(pod)},
        evidence=[f"spec.schedulerName: {scheduler}", f"created: {created}", "FailedScheduling events: none"],
    )


CHECK = Check(name="sched.silence", reads=("pending_pod", "events"), emits=(SCHED_NO_EVENTS, SCHED_EVENTS_STALE),
              run=run)
