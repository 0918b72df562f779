"""A pending pod the scheduler has said nothing about: wrong schedulerName, or no scheduler running.

Any finding that explains the pod makes this one redundant; the catalogue says which
(``unless:``), so this check does not look at what other checks found.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_NO_EVENTS with the scheduler the pod waits for."""
    pod = facts.pending_pod
    if pod is None or facts.events.scheduling:
        return
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "?")
    yield detect(
        "SCHED_NO_EVENTS",
        pod_subject(pod),
        pod=pod_ref(pod),
        evidence=[f"spec.schedulerName: {scheduler}", f"created: {created}", "FailedScheduling events: none"],
    )


CHECK = Check(name="sched.silence", reads=("pending_pod", "events"), emits=("SCHED_NO_EVENTS",), run=run)
