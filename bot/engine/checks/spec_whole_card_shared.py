"""A whole-card qGPU request while every candidate node's cards already carry shared slices."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import QGPU_CORE, pod_ref
from bot.engine.facts import Facts
from bot.kube.resources import pod_gpu_requests


class SpecWholeCardShared(TypedDict):
    pod: str
    requested: str
    nodes: str


SPEC_WHOLE_CARD_SHARED = Code("SPEC_WHOLE_CARD_SHARED", SpecWholeCardShared)


def run(facts: Facts) -> Iterator[Detection]:
    """SPEC_WHOLE_CARD_SHARED with the shared pods per node and the scheduler's card view."""
    pod = facts.pending_pod
    if pod is None:
        return
    core = pod_gpu_requests(pod).get(QGPU_CORE, 0)
    candidates = facts.candidates
    if core < 100 or not candidates:
        return
    evidence = []
    for name in sorted(candidates):
        shared = [p for p in facts.node_pods.get(name, []) if p.live and 0 < p.gpu.get(QGPU_CORE, 0) < 100]
        if not shared:
            return
        used = sum(p.gpu.get(QGPU_CORE, 0) for p in shared)
        evidence.append(
            f"{name}: {len(shared)} shared qGPU pod(s) using {used:g} core: " + ", ".join(p.ref for p in shared[:5])
        )
    for msg in facts.events.scheduling[:1]:
        evidence += [r.qgpu.describe() for r in msg.reasons if r.qgpu is not None]
    yield SPEC_WHOLE_CARD_SHARED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "requested": f"{core:g}",
            "nodes": ", ".join(sorted(candidates)),
        },
        evidence=evidence,
    )


CHECK = Check(
    name="spec.whole_card_shared",
    reads=("pending_pod", "candidates", "node_pods", "events"),
    emits=(SPEC_WHOLE_CARD_SHARED,),
    run=run,
)
