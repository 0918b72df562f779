"""Pods with a deletionTimestamp that still hold GPU resources on the nodes in scope."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.checks._common import PodItem, fmt_num
from bot.engine.facts import Facts


class TerminatingHoldsGpu(TypedDict):
    node: str
    count: int
    pod: str
    holders: list[PodItem]


TERMINATING_HOLDS_GPU = Code("TERMINATING_HOLDS_GPU", TerminatingHoldsGpu)


def run(facts: Facts) -> Iterator[Detection]:
    """TERMINATING_HOLDS_GPU per node; role ``cause`` when the asked pod is waiting for a GPU."""
    holders = [p for pods in facts.node_pods.values() for p in pods if p.terminating and p.gpu and p.live]
    role = "cause" if facts.pending_pod is not None else ""
    for node in sorted({p.node for p in holders}):
        mine = [p for p in holders if p.node == node]
        yield TERMINATING_HOLDS_GPU.detect(
            node_subject(node),
            {
                "node": node,
                "count": len(mine),
                "pod": ", ".join(p.ref for p in mine[:5]),
                "holders": [{"namespace": p.namespace, "name": p.name, "ref": p.ref} for p in mine[:3]],
            },
            role=role,
            evidence=[
                f"{p.ref} Terminating since {p.deletion_timestamp}, holds "
                + ", ".join(f"{k}={fmt_num(v)}" for k, v in sorted(p.gpu.items()))
                for p in mine[:20]
            ],
        )


CHECK = Check(
    name="terminating.holders", reads=("pending_pod", "node_pods"), emits=(TERMINATING_HOLDS_GPU,), run=run
)
