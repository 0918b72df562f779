"""Candidate nodes marked unschedulable; the cause when they are all the pod could use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import NodeItem, pod_ref
from bot.engine.facts import Facts


class SchedUnschedulableNode(TypedDict):
    pod: str
    nodes: str
    count: int
    cordoned: list[NodeItem]


SCHED_UNSCHEDULABLE_NODE = Code("SCHED_UNSCHEDULABLE_NODE", SchedUnschedulableNode)


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_UNSCHEDULABLE_NODE; role ``partial`` when other candidates remain schedulable."""
    pod = facts.pending_pod
    if pod is None:
        return
    candidates = facts.candidates
    cordoned = sorted(n for n, o in candidates.items() if (o.get("spec") or {}).get("unschedulable"))
    if not cordoned:
        return
    yield SCHED_UNSCHEDULABLE_NODE.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "nodes": ", ".join(cordoned),
            "count": len(cordoned),
            "cordoned": [{"node": n} for n in cordoned],
        },
        role="" if len(cordoned) == len(candidates) else "partial",
        evidence=[f"{n}: spec.unschedulable=true" for n in cordoned],
    )


CHECK = Check(name="sched.cordoned", reads=("pending_pod", "candidates"), emits=(SCHED_UNSCHEDULABLE_NODE,), run=run)
