"""Build a pod's story (``bot.report.story.PodStory``) from API objects, and tell history from news.

Pure: plain dicts in, a story out. Which events are history:
- an event about an earlier pod of the same name (a StatefulSet or a bare pod recreated): its
  ``involvedObject.uid`` is not this pod's;
- a scheduler's event older than the moment the pod was scheduled (PodScheduled=True);
- for a pod still waiting for a node, a scheduler's message older than a change of the nodes it
  could use that the scheduler reacts to (a node that became Ready, or joined, after it): the
  scheduler has not answered since, so its message describes a cluster that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.kube.objects import meta_of, name_of
from bot.kube.pod_status import classify
from bot.kube.resources import pod_node_gpu_requests
from bot.kube.scheduling import event_source, event_time, is_scheduler_event
from bot.report.story import PodStory, StoryCondition, StoryContainer, StoryEvent, StoryOwner

Obj = Mapping[str, Any]

#: distinct events kept in a story (newest first); the rest are counted
MAX_EVENTS = 12
#: containers and owners' conditions kept
MAX_CONTAINERS = 8
#: characters kept of one message, and lines of a termination message
MESSAGE_CHARS = 500
TAIL_LINES = 3
#: owner conditions that say why a controller makes no pods (True = a problem)
OWNER_PROBLEMS = {"ReplicaFailure": "True", "Failed": "True", "FailureTarget": "True", "Suspended": "True",
                  "Progressing": "False", "Available": "False"}
_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Cutoff:
    """Before ``at``, a scheduler's message is history, because of ``why``."""

    at: datetime
    why: str


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _condition(obj: Obj, kind: str) -> Mapping[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return {}


def scheduled_at(pod: Obj) -> datetime | None:
    """When the pod was placed on a node (PodScheduled=True), None when it is not."""
    cond = _condition(pod, "PodScheduled")
    return _parse(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None


def node_change_cutoff(pod: Obj, nodes: Mapping[str, Obj]) -> Cutoff | None:
    """The newest change a pending pod's scheduler reacts to on a node that could offer what it
    asks for: a node that became Ready or joined. None when there is none (or the pod is placed).
    ``nodes``: the cluster's, or any part of them that holds every node offering what it asks."""
    if (pod.get("spec") or {}).get("nodeName"):
        return None
    wanted = list(pod_node_gpu_requests(pod))
    best: tuple[datetime, str, str] | None = None  # worded once, at the end: asked of every node
    for name, node in nodes.items():
        capacity = (node.get("status") or {}).get("capacity") or {}
        if not all(r in capacity for r in wanted):
            continue
        ready = _condition(node, "Ready")
        if ready.get("status") != "True":
            continue
        for at, why in ((_parse(ready.get("lastTransitionTime")), "became Ready"),
                        (_parse(meta_of(node).get("creationTimestamp")), "joined")):
            if at is not None and (best is None or at > best[0]):
                best = (at, name, why)
    if best is None:
        return None
    at, name, why = best
    return Cutoff(at, f"node {name} {why} at {at.strftime('%Y-%m-%dT%H:%M:%SZ')}")


class HistoryJudge:
    """``history_reason`` for the events of one pod: its uid and the moment it was placed read
    once, not once per event (a pod can carry 20,000 events)."""

    def __init__(self, pod: Obj | None, cutoff: Cutoff | None) -> None:
        self.pod = pod
        self.cutoff = cutoff
        self.uid = meta_of(pod).get("uid") if pod is not None else None
        self.placed = scheduled_at(pod) if pod is not None else None

    def reason(self, event: Obj, when: datetime | None = None) -> str:
        """Why ``event`` is history, or "" when it is current; ``when``: its ``event_time`` where
        the caller has it (a scheduler's event)."""
        if self.pod is None:
            return ""
        obj = event.get("involvedObject") or event.get("regarding") or {}
        if obj.get("kind") == "Pod" and obj.get("uid") and self.uid and obj.get("uid") != self.uid:
            return "about an earlier pod of the same name"
        if when is None:
            if not is_scheduler_event(event):
                return ""
            when = event_time(event)
        if self.placed is not None and when < self.placed:
            return f"before the pod was scheduled at {self.placed.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        if self.cutoff is not None and when != _EPOCH and when < self.cutoff.at:
            return f"before {self.cutoff.why}; the scheduler has not answered since"
        return ""


def history_reason(event: Obj, pod: Obj | None, cutoff: Cutoff | None) -> str:
    """Why ``event`` (about the pod or an owner) is history, or "" when it is current."""
    return HistoryJudge(pod, cutoff).reason(event)


def _container(cs: Mapping[str, Any], *, init: bool) -> StoryContainer | None:
    state = cs.get("state") or {}
    if cs.get("ready") and "running" in state:
        return None
    if init and ((state.get("terminated") or {}).get("exitCode") == 0):
        return None  # an init container that finished its job
    kind, detail = next(((k, v) for k, v in state.items() if isinstance(v, Mapping)), ("unknown", {}))
    last = (cs.get("lastState") or {}).get("terminated") or {}
    words = str((state.get("terminated") or {}).get("message") or last.get("message") or "")
    lines = [ln.rstrip() for ln in words.splitlines() if ln.strip()]
    exit_code = detail.get("exitCode") if kind == "terminated" else None
    return StoryContainer(
        name=str(cs.get("name") or "?"),
        init=init,
        state=kind,
        reason=str(detail.get("reason") or ("not ready" if kind == "running" else "")),
        message="" if kind == "terminated" else str(detail.get("message") or "")[:MESSAGE_CHARS],
        exit_code=int(exit_code) if isinstance(exit_code, int) else None,
        restarts=int(cs.get("restartCount") or 0),
        last_reason=str(last.get("reason") or ""),
        last_exit_code=int(last["exitCode"]) if isinstance(last.get("exitCode"), int) else None,
        termination_tail=" | ".join(lines[-TAIL_LINES:])[-MESSAGE_CHARS:],
    )


def _containers(pod: Obj) -> list[StoryContainer]:
    status = pod.get("status") or {}
    out = [c for cs in status.get("initContainerStatuses") or [] if (c := _container(cs, init=True))]
    out += [c for cs in status.get("containerStatuses") or [] if (c := _container(cs, init=False))]
    return out[:MAX_CONTAINERS]


def _conditions(pod: Obj) -> list[StoryCondition]:
    out = []
    for c in (pod.get("status") or {}).get("conditions") or []:
        if not isinstance(c, Mapping):
            continue
        if c.get("status") == "True" and c.get("type") != "PodScheduled":
            continue
        if c.get("status") == "True" and not c.get("reason"):
            continue  # scheduled, nothing to say
        out.append(StoryCondition(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""),
                                  str(c.get("message") or "")[:MESSAGE_CHARS], str(c.get("lastTransitionTime") or "")))
    return out


def _owners(owners: Sequence[Obj]) -> list[StoryOwner]:
    out = []
    for o in owners:
        conds = [
            StoryCondition(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""),
                           str(c.get("message") or "")[:MESSAGE_CHARS], str(c.get("lastTransitionTime") or ""))
            for c in (o.get("status") or {}).get("conditions") or []
            if isinstance(c, Mapping) and OWNER_PROBLEMS.get(str(c.get("type"))) == c.get("status")
        ]
        out.append(StoryOwner(str(o.get("kind") or "?"), (name_of(o) or "?"),
                              conds[:MAX_CONTAINERS]))
    return out


def _events(events: Iterable[Obj], pod: Obj | None, cutoff: Cutoff | None, now: datetime) -> list[StoryEvent]:
    """Distinct events newest first: one per object, type, reason and message, counts added."""
    folded: dict[tuple[str, str, str, str], tuple[datetime, Obj, int]] = {}
    for e in events:
        if not isinstance(e, Mapping):
            continue
        obj = e.get("involvedObject") or e.get("regarding") or {}
        ref = f"{obj.get('kind', '?')}/{obj.get('name', '?')}"
        message = " ".join(str(e.get("message") or e.get("note") or "").split())
        key = (ref, str(e.get("type") or ""), str(e.get("reason") or ""), message)
        count = int(e.get("count") or (e.get("series") or {}).get("count") or 1)
        when = event_time(e)
        seen = folded.get(key)
        if seen is None:
            folded[key] = (when, e, count)
        else:
            newest = (when, e) if when >= seen[0] else (seen[0], seen[1])
            folded[key] = (newest[0], newest[1], seen[2] + count)
    out = []
    judge = HistoryJudge(pod, cutoff)
    for (ref, kind, reason, message), (when, e, count) in sorted(folded.items(), key=lambda kv: kv[1][0],
                                                                  reverse=True):
        why = judge.reason(e)
        known = when != _EPOCH
        out.append(StoryEvent(
            object=ref, type=kind, reason=reason, message=message[:MESSAGE_CHARS], source=event_source(e),
            count=count, last=when.strftime("%Y-%m-%dT%H:%M:%SZ") if known else "",
            age_s=int((now - when).total_seconds()) if known else None, earlier=bool(why), earlier_why=why,
        ))
    return out


def needs_story(pod: Obj | None) -> bool:
    """A pod that is not Running and Ready (and not a finished Job's pod) has a story to tell."""
    if pod is None:
        return False
    state = classify(pod)
    if state.phase == "Succeeded":
        return False
    return not (state.display_status == "Running" and state.ready)


def build_story(
    pod: Obj,
    owners: Sequence[Obj] = (),
    events: Iterable[Obj] = (),
    *,
    cutoff: Cutoff | None = None,
    now: datetime | None = None,
) -> PodStory:
    """The story of ``pod``: ``events`` are the pod's and its owners' (any source)."""
    state = classify(pod)
    meta, spec = meta_of(pod), pod.get("spec") or {}
    all_events = _events(events, pod, cutoff, now or datetime.now(UTC))
    status = state.display_status + ("" if state.ready or state.display_status != "Running" else " (not ready)")
    return PodStory(
        pod=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        phase=state.phase,
        status=status,
        scheduler=str(spec.get("schedulerName") or "default-scheduler"),
        node=str(spec.get("nodeName") or ""),
        gates=[str(g.get("name")) for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)],
        conditions=_conditions(pod),
        containers=_containers(pod),
        owners=[o for o in _owners(owners) if o.conditions],
        events=all_events[:MAX_EVENTS],
        events_total=len(all_events),
        events_omitted=max(0, len(all_events) - MAX_EVENTS),
    )


def build_workload_story(
    workload: Obj,
    owners: Sequence[Obj] = (),
    events: Iterable[Obj] = (),
    *,
    status: str = "",
    now: datetime | None = None,
) -> PodStory:
    """The story of a workload that has no pod: its own and its owners' conditions and events
    (a ReplicaSet's FailedCreate is where a quota, LimitRange, PodSecurity or webhook refusal is)."""
    meta, spec = meta_of(workload), workload.get("spec") or {}
    template = ((spec.get("template") or {}).get("spec") or {})
    all_events = _events(events, None, None, now or datetime.now(UTC))
    return PodStory(
        pod=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        phase="",
        status=status or "not ready",
        scheduler=str(template.get("schedulerName") or "default-scheduler"),
        owners=[o for o in _owners(owners) if o.conditions],
        events=all_events[:MAX_EVENTS],
        events_total=len(all_events),
        events_omitted=max(0, len(all_events) - MAX_EVENTS),
        kind=str(workload.get("kind") or "Workload"),
    )
