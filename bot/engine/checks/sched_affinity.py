"""Node selector / required node affinity that no candidate node satisfies, beside the nodes' labels."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.affinity import node_matches


class SchedNodeSelectorMismatch(TypedDict):
    pod: str
    selector: str


SCHED_NODE_SELECTOR_MISMATCH = Code("SCHED_NODE_SELECTOR_MISMATCH", SchedNodeSelectorMismatch)


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_NODE_SELECTOR_MISMATCH with each candidate's mismatching labels."""
    pod = facts.pending_pod
    if pod is None:
        return
    spec = pod.get("spec") or {}
    if not spec.get("nodeSelector") and not (spec.get("affinity") or {}).get("nodeAffinity"):
        return
    results = {name: node_matches(pod, node) for name, node in facts.candidates.items()}
    if not results or any(r.ok for r in results.values()):
        return
    selector = ", ".join(f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items()) or "node affinity"
    evidence = [f"{name}: {'; '.join(r.mismatches)}" for name, r in sorted(results.items())]
    yield SCHED_NODE_SELECTOR_MISMATCH.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "selector": selector,
        },
        evidence=evidence[:20],
    )


CHECK = Check(
    name="sched.affinity", reads=("pending_pod", "candidates"), emits=(SCHED_NODE_SELECTOR_MISMATCH,), run=run
)
