"""A pod of a Volcano gang waits: the gang's story in one finding, not one report per pod.

Volcano binds none of a PodGroup's pods until ``minMember`` of them can be placed at once, and
only enqueues the group when its Queue is Open and has room under its capability. Each pod only
says "pod group is not ready"; the PodGroup's condition says "3/4 tasks in gang unschedulable".
This check reads the PodGroup and its Queue, places the gang's waiting pods on the nodes' free
GPUs (``bot.kube.gang``), and says how many tasks can be placed and which cannot, and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._gang import (
    VOLCANO_GANG_UNSCHEDULABLE,
    GangMember,
    gang_story,
    group_lines,
    res_text,
    waiting_member,
)
from bot.engine.facts import Facts
from bot.engine.queue_facts import GangFacts
from bot.kube.resources import quantity_or_none

VOLCANO_PODGROUP_MISSING = Code("VOLCANO_PODGROUP_MISSING", GangMember)


class VolcanoQueueClosed(GangMember):
    queue_state: str


VOLCANO_QUEUE_CLOSED = Code("VOLCANO_QUEUE_CLOSED", VolcanoQueueClosed)


class VolcanoQueueOverCapability(GangMember):
    what: str


VOLCANO_QUEUE_OVER_CAPABILITY = Code("VOLCANO_QUEUE_OVER_CAPABILITY", VolcanoQueueOverCapability)

Obj = dict[str, Any]
OPEN = ("Open", "")


def _queue_lines(g: GangFacts) -> list[str]:
    q = g.queue or {}
    spec, status = q.get("spec") or {}, q.get("status") or {}
    return [
        f"Queue {g.queue_name}: state {status.get('state') or '?'}, capability {res_text(spec.get('capability'))}, "
        f"deserved {res_text(spec.get('deserved'))}, allocated {res_text(status.get('allocated'))}, "
        f"reclaimable {spec.get('reclaimable', True)}"
    ]


def _over_capability(g: GangFacts) -> list[str]:
    """Resources where allocated plus the group's minResources exceed the Queue's capability."""
    q = g.queue or {}
    cap = (q.get("spec") or {}).get("capability") or {}
    allocated = (q.get("status") or {}).get("allocated") or {}
    need = ((g.pod_group or {}).get("spec") or {}).get("minResources") or {}
    out = []
    for res, limit in sorted(cap.items()):
        want = quantity_or_none(need.get(res))
        top = quantity_or_none(limit)
        if want is None or top is None or want == 0:
            continue
        have = quantity_or_none(allocated.get(res)) or 0
        if have + want > top:
            out.append(f"{res}: allocated {allocated.get(res, 0)} + the gang's {need.get(res)} > capability {limit}")
    return out


def run(facts: Facts) -> Iterator[Detection]:
    """VOLCANO_* for a pod whose gang Volcano holds; nothing for other pods or a running gang."""
    g = facts.queues.volcano
    member = waiting_member(g, facts.target.pod, facts.target.workload)
    if g is None or member is None:
        return
    subject, base = member
    ns = base["namespace"]
    if g.pod_group is None:
        line = f"annotation scheduling.k8s.io/group-name={g.group_name}: no such PodGroup in {ns}"
        if facts.target.pod is None:
            line = f"no PodGroup in {ns} is owned by {base['pod']} (is the vc-controller-manager running?)"
        yield VOLCANO_PODGROUP_MISSING.detect(subject, {**base}, evidence=[line])
        return
    if g.queue is None:
        yield VOLCANO_QUEUE_CLOSED.detect(
            subject,
            {
                "queue_state": "missing",
                **base,
            },
            role="missing",
            evidence=group_lines(g) + [f"Queue {g.queue_name} does not exist"],
        )
        return
    state = str(((g.queue.get("status") or {}).get("state")) or "")
    if state not in OPEN:
        lines = group_lines(g) + _queue_lines(g)
        yield VOLCANO_QUEUE_CLOSED.detect(subject, {"queue_state": state, **base}, evidence=lines)
        return
    phase = str(((g.pod_group.get("status") or {}).get("phase")) or "")
    over = _over_capability(g) if phase in ("Pending", "") else []
    if over:
        yield VOLCANO_QUEUE_OVER_CAPABILITY.detect(
            subject,
            {
                "what": "; ".join(over),
                **base,
            },
            evidence=group_lines(g) + _queue_lines(g) + over,
        )
        return
    yield from gang_story(facts, g, VOLCANO_GANG_UNSCHEDULABLE, subject, base, _queue_lines(g))


CHECK = Check(
    name="queue.volcano",
    reads=("target", "queues", "nodes", "node_pods"),
    emits=(VOLCANO_PODGROUP_MISSING, VOLCANO_QUEUE_CLOSED, VOLCANO_QUEUE_OVER_CAPABILITY,
           VOLCANO_GANG_UNSCHEDULABLE),
    run=run,
)
