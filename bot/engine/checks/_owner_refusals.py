"""Refusals a workload's controllers record when they cannot create its pods, parsed by the caller.

A refused pod never exists, so the reason lives on the controller: its ``FailedCreate`` events
(newest first) and, for a ReplicaSet or Deployment, the ``ReplicaFailure`` condition that outlives
the event. Quota, LimitRange, Pod Security and RuntimeClass readers share this walk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from bot.engine.checks._common import event_time
from bot.engine.facts import Facts
from bot.kube.pod_status import classify
from bot.kube.workload import replica_failure, workload_status

T = TypeVar("T")


def owner_refusals(
    facts: Facts, parse: Callable[[str], T | None], key: Callable[[T], str], *, width: int = 600
) -> list[tuple[T, str, str]]:
    """(parsed refusal, ``kind/name`` of the controller that recorded it, evidence line), one per key."""
    found: list[tuple[T, str, str]] = []
    seen: set[str] = set()
    for event in sorted(facts.events.owners, key=event_time, reverse=True):
        if event.get("reason") != "FailedCreate":
            continue
        message = str(event.get("message") or "")
        parsed = parse(message)
        if parsed is None or key(parsed) in seen:
            continue
        seen.add(key(parsed))
        obj = event.get("involvedObject") or {}
        count = event.get("count")
        times = f" (x{count}, last {event_time(event) or '?'})" if count else ""
        who = f"{str(obj.get('kind', 'object')).lower()}/{obj.get('name', '?')}"
        found.append((parsed, who, f"{obj.get('kind')}/{obj.get('name')} FailedCreate{times}: {message[:width]}"))
    for owner in facts.target.owners:
        failure = replica_failure(owner)
        parsed = parse(failure) if failure else None
        if parsed is not None and key(parsed) not in seen:
            seen.add(key(parsed))
            who = f"{str(owner.get('kind', 'object')).lower()}/{(owner.get('metadata') or {}).get('name', '?')}"
            found.append((parsed, who, f"{who} condition ReplicaFailure: {(failure or '')[:width]}"))
    return found


def short_of_pods(facts: Facts) -> tuple[bool, str]:
    """(whether a refusal can matter, the role): the workload (asked, else the pod's top owner) is
    short of pods; when the asked pod itself exists and is not Running and Ready, the refusal is
    about its siblings (``sibling``), since that pod was admitted."""
    t = facts.target
    workload = t.workload or (t.owners[-1] if t.owners else None)
    status = workload_status(workload) if workload is not None else None
    if status is not None and status.satisfied:
        return False, ""
    if t.workload is not None:
        return True, ""
    state = classify(t.pod or {})
    if state.display_status == "Running" and state.ready:
        return False, ""
    return True, "sibling"
