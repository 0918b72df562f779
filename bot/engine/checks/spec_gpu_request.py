"""A pod that evidently expects a GPU but asks for none gets no card, even on a GPU node.

Only when the pod shows it wants one (a CUDA image, NVIDIA_VISIBLE_DEVICES, a GPU node selector
or affinity, the nvidia runtime class): plenty of pods in a GPU cluster are CPU-only on purpose
(caches, proxies, data loaders), and "add a GPU request" would be wrong advice for them.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.gpu import gpu_expectations
from bot.kube.resources import pod_gpu_requests


def run(facts: Facts) -> Iterator[Detection]:
    """SPEC_NO_GPU_REQUEST naming the containers and the signs that a GPU is expected."""
    pod = facts.pod
    if pod is None or pod_gpu_requests(pod):
        return
    hints = gpu_expectations(pod)
    if not hints:
        return
    containers = [str(c.get("name", "?")) for c in (pod.get("spec") or {}).get("containers") or []]
    yield detect(
        "SPEC_NO_GPU_REQUEST",
        pod_subject(pod),
        pod=pod_ref(pod),
        container=", ".join(containers),
        evidence=[f"container {c}: no GPU resource in requests or limits" for c in containers]
        + [f"expects a GPU: {h}" for h in hints],
    )


CHECK = Check(name="spec.gpu_request", reads=("pod",), emits=("SPEC_NO_GPU_REQUEST",), run=run)
