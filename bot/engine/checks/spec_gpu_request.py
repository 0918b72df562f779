"""A pod that asks for no GPU at all gets no card, even on a GPU node."""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.resources import pod_gpu_requests


def run(facts: Facts) -> Iterator[Detection]:
    """SPEC_NO_GPU_REQUEST naming the containers."""
    pod = facts.pod
    if pod is None or pod_gpu_requests(pod):
        return
    containers = [str(c.get("name", "?")) for c in (pod.get("spec") or {}).get("containers") or []]
    yield detect(
        "SPEC_NO_GPU_REQUEST",
        pod_subject(pod),
        pod=pod_ref(pod),
        container=", ".join(containers),
        evidence=[f"container {c}: no GPU resource in requests or limits" for c in containers],
    )


CHECK = Check(name="spec.gpu_request", reads=("pod",), emits=("SPEC_NO_GPU_REQUEST",), run=run)
