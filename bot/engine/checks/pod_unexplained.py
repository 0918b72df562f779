"""A pod that is not Running and Ready (or a workload short of ready replicas) that no check explains.

"No problem found" is the wrong answer for a pod that does not run. This check always fires for
such a target; the catalogue drops it (``unless:``) as soon as any specific finding explains the
state. What is left says what the bot looked at, what it cannot see, and the newest events, so
the user knows where to look next.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import event_time
from bot.engine.facts import Facts
from bot.kube.objects import Obj, meta_of
from bot.kube.pod_status import classify
from bot.kube.workload import replica_failure, workload_status


class PodNotRunningUnexplained(TypedDict):
    pod: str
    status: str
    checked: str
    unchecked: str
    namespace: str


POD_NOT_RUNNING_UNEXPLAINED = Code("POD_NOT_RUNNING_UNEXPLAINED", PodNotRunningUnexplained)


CHECKED = (
    "the pod's phase, conditions and container states; its events and its controllers' events "
    "(FailedScheduling, FailedCreate, autoscaler events); node taints, selectors and affinity; "
    "GPU capacity and allocation; ResourceQuotas; admission webhook denials"
)
UNCHECKED = (
    "the scheduler's, controllers' and autoscaler's own logs; events older than about an hour "
    "(the API server drops them); admission plugins that refuse without an event; anything a "
    "read failed on (listed under skipped)"
)


def _event_lines(events: list[Obj], limit: int = 4) -> list[str]:
    newest = sorted(events, key=event_time, reverse=True)[:limit]
    lines = []
    for e in newest:
        obj = e.get("involvedObject") or {}
        count = f" x{e['count']}" if e.get("count") else ""
        lines.append(
            f"event {obj.get('kind', '?')}/{obj.get('name', '?')} {e.get('type', '')} {e.get('reason', '')}{count}: "
            f"{str(e.get('message') or e.get('note') or '')[:300]}"
        )
    return lines


def _pod_lines(pod: Obj) -> list[str]:
    state = classify(pod)
    detail = f": {state.detail}" if state.detail else ""
    lines = [f"pod phase {state.phase}, shown as {state.display_status}{detail}"]
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True":
            why = " ".join(str(cond.get(k) or "") for k in ("reason", "message")).strip()
            lines.append(f"condition {cond.get('type')}={cond.get('status')}" + (f" ({why[:300]})" if why else ""))
    return lines


def run(facts: Facts) -> Iterator[Detection]:
    """POD_NOT_RUNNING_UNEXPLAINED for a target that does not run (the catalogue drops it when explained)."""
    t = facts.target
    if not t.kind or not t.namespace_exists or (t.pod is None and t.workload is None):
        return
    pod = t.pod
    status = workload_status(t.workload) if t.workload is not None else None
    pod_state = classify(pod) if pod is not None else None
    pod_down = pod_state is not None and not (pod_state.display_status == "Running" and pod_state.ready)
    if pod_state is not None and pod_state.phase == "Succeeded":
        pod_down = False  # a finished pod of a Job is done, not stuck
    short = status is not None and not status.satisfied
    if (t.workload is not None and not short) or (t.workload is None and not pod_down):
        return
    evidence: list[str] = []
    story = facts.story
    if status is not None and (story is None or story.kind == "Pod"):
        evidence.append(status.describe())
        if t.workload is not None and not t.pods:
            evidence.append(f"no pod of {t.kind.lower()} {t.name} exists")
    if story is not None:
        # the pod's own story, quoted: its state, conditions, containers, owners and events
        evidence += story.lines(max_events=8)
    else:
        if pod is not None:
            meta = meta_of(pod)
            evidence.append(f"looked at pod {meta.get('namespace')}/{meta.get('name')}")
            evidence += _pod_lines(pod)
        for owner in t.owners:
            failure = replica_failure(owner)
            if failure:
                evidence.append(f"{str(owner.get('kind', '')).lower()}/{(owner.get('metadata') or {}).get('name')} "
                                f"ReplicaFailure: {failure[:400]}")
        events = facts.events.pod + facts.events.owners
        evidence += _event_lines(events) or ["no events on the pod or its controllers (none yet, or expired)"]
    if status is not None and pod_state is None:
        shown = f"{status.ready} of {status.desired} ready"
    elif pod_state is not None and short and status is not None:
        shown = f"{pod_state.display_status}; {status.ready} of {status.desired} ready"
    else:
        shown = pod_state.display_status if pod_state is not None else "not running"
    target = f"{t.namespace}/{t.name}" if t.workload is None else f"{t.kind.lower()} {t.namespace}/{t.name}"
    yield POD_NOT_RUNNING_UNEXPLAINED.detect(
        f"{t.kind.lower()}/{t.namespace}/{t.name}",
        {
            "pod": target,
            "status": shown,
            "checked": CHECKED,
            "unchecked": UNCHECKED,
            "namespace": t.namespace,
        },
        evidence=evidence,
    )


CHECK = Check(name="pod.unexplained", reads=("target", "events", "story"), emits=(POD_NOT_RUNNING_UNEXPLAINED,),
              run=run)
