"""A pod KAI Scheduler holds: its Queue's quota and limit, and its PodGroup's gang.

KAI (NVIDIA's scheduler, formerly Run:ai's) schedules pods by PodGroup (``pod-group-name``
annotation, made by its pod-grouper) into hierarchical Queues (``kai.scheduler/queue`` label)
with, per resource, a deserved ``quota``, an ``overQuotaWeight`` for what is beyond it and a hard
``limit`` (-1: none). A pod waits when its queue is missing, when the queue's limit (or its quota,
with no over-quota weight) leaves no room, when a parent queue's does (the hierarchy binds every
child), or when its gang does not fit on the nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._gang import KAI_GANG_UNSCHEDULABLE, GangMember, gang_story, group_lines, waiting_member
from bot.engine.facts import Facts
from bot.engine.queue_facts import GangFacts
from bot.kube.objects import Obj, name_of
from bot.kube.resources import pod_node_gpu_requests, quantity_or_none

KAI_QUEUE_MISSING = Code("KAI_QUEUE_MISSING", GangMember)


class KaiQueueOverLimit(GangMember):
    what: str


KAI_QUEUE_OVER_LIMIT = Code("KAI_QUEUE_OVER_LIMIT", KaiQueueOverLimit)


class KaiParentQueueOverLimit(KaiQueueOverLimit):
    parent: str


KAI_PARENT_QUEUE_OVER_LIMIT = Code("KAI_PARENT_QUEUE_OVER_LIMIT", KaiParentQueueOverLimit)

GPU = "nvidia.com/gpu"


def _gpu_spec(queue: Obj) -> dict[str, Any]:
    return (((queue.get("spec") or {}).get("resources") or {}).get("gpu")) or {}


def _allocated(queue: Obj) -> Decimal:
    status = queue.get("status") or {}
    value = (status.get("allocated") or {}).get(GPU) or (status.get("allocated") or {}).get("gpu")
    return quantity_or_none(value) or Decimal(0)


def _queue_lines(g: GangFacts) -> list[str]:
    q = g.queue or {}
    gpu = _gpu_spec(q)
    status = q.get("status") or {}
    return [
        f"Queue {g.queue_name}: gpu quota {gpu.get('quota', '?')}, overQuotaWeight {gpu.get('overQuotaWeight', '?')}, "
        f"limit {gpu.get('limit', '?')}; allocated {(status.get('allocated') or {}).get(GPU, 0)}, "
        f"requested {(status.get('requested') or {}).get(GPU, '?')}; "
        f"parent {(q.get('spec') or {}).get('parentQueue') or '-'}"
    ]


def _asks(g: GangFacts) -> Decimal:
    waiting = [p for p in g.pods if not (p.get("spec") or {}).get("nodeName")]
    return Decimal(str(sum(pod_node_gpu_requests(p).get(GPU, 0.0) for p in waiting))).normalize()


def _room(g: GangFacts) -> tuple[str, str] | None:
    """(role, what) when the queue's limit, or its quota without over-quota weight, leaves no room."""
    return _room_in(g.queue or {}, _asks(g))


def _room_in(q: Obj, want: Decimal) -> tuple[str, str] | None:
    gpu = _gpu_spec(q)
    have = _allocated(q).normalize()
    if want <= 0:
        return None
    limit = quantity_or_none(gpu.get("limit"))
    if limit is not None and limit >= 0 and have + want > limit:
        return "limit", f"{have:f} of its GPU limit {limit:f} allocated, the gang asks {want:f} more"
    quota = quantity_or_none(gpu.get("quota"))
    weight = quantity_or_none(gpu.get("overQuotaWeight"))
    if quota is not None and quota >= 0 and weight == 0 and have + want > quota:
        return "quota", f"{have:f} of its GPU quota {quota:f} allocated, the gang asks {want:f} more, overQuotaWeight 0"
    return None


def _parent_room(g: GangFacts) -> tuple[str, str, str] | None:
    """(parent, role, what) for the nearest ancestor whose own limit (or quota without over-quota
    weight) leaves no room: KAI counts a child's pods against every queue above it, so a parent at
    its limit holds every child back however much room the child itself has."""
    want = _asks(g)
    for parent in g.parents:
        room = _room_in(parent, want)
        if room is not None:
            return (name_of(parent) or "?"), *room
    return None


def _parent_lines(g: GangFacts) -> list[str]:
    lines = []
    for q in g.parents:
        gpu, status = _gpu_spec(q), q.get("status") or {}
        lines.append(
            f"parent Queue {(q.get('metadata') or {}).get('name')}: gpu quota {gpu.get('quota', '?')}, "
            f"overQuotaWeight {gpu.get('overQuotaWeight', '?')}, limit {gpu.get('limit', '?')}; "
            f"allocated {(status.get('allocated') or {}).get(GPU, 0)} (its children's pods included)"
        )
    if g.missing_parent:
        lines.append(f"parent Queue {g.missing_parent} does not exist")
    return lines


def run(facts: Facts) -> Iterator[Detection]:
    """KAI_* for a waiting pod of a KAI PodGroup; nothing for other pods."""
    g = facts.queues.kai
    member = waiting_member(g, facts.target.pod)
    if g is None or member is None:
        return
    subject, base = member
    if g.queue is None:
        lines = group_lines(g) if g.pod_group else []
        lines.append(f"Queue {g.queue_name or '(none)'} does not exist")
        yield KAI_QUEUE_MISSING.detect(subject, {**base}, evidence=lines)
        return
    room = _room(g)
    if room is not None:
        role, what = room
        yield KAI_QUEUE_OVER_LIMIT.detect(subject, {"what": what, **base}, role=role,
                                          evidence=group_lines(g) + _queue_lines(g) + _parent_lines(g))
        return
    above = _parent_room(g)
    if above is not None:
        parent, role, what = above
        yield KAI_PARENT_QUEUE_OVER_LIMIT.detect(subject, {"what": what, "parent": parent, **base}, role=role,
                                                 evidence=group_lines(g) + _queue_lines(g) + _parent_lines(g))
        return
    if g.pod_group is not None:
        yield from gang_story(facts, g, KAI_GANG_UNSCHEDULABLE, subject, base, _queue_lines(g) + _parent_lines(g))


CHECK = Check(
    name="queue.kai",
    reads=("target", "queues", "nodes", "node_pods"),
    emits=(KAI_QUEUE_MISSING, KAI_QUEUE_OVER_LIMIT, KAI_PARENT_QUEUE_OVER_LIMIT, KAI_GANG_UNSCHEDULABLE),
    run=run,
)
