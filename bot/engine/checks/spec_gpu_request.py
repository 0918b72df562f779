"""A pod that evidently expects a GPU but asks for none gets no card, even on a GPU node.

Only when the pod shows it wants one (a CUDA image, NVIDIA_VISIBLE_DEVICES, a GPU node selector
or affinity, the nvidia runtime class): plenty of pods in a GPU cluster are CPU-only on purpose
(caches, proxies, data loaders), and "add a GPU request" would be wrong advice for them. When
such a pod is Pending behind the GPU nodes' ``nvidia.com/gpu`` taint, the missing request is the
cause (role ``cause``): GKE and AKS add the matching toleration only to pods that request a GPU,
and a toleration alone would land it on a GPU node without a card.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.affinity import node_matches
from bot.kube.gpu import gpu_expectations
from bot.kube.resources import is_gpu_resource, pod_gpu_requests
from bot.kube.taints import taint_str, untolerated_taints


class SpecNoGpuRequest(TypedDict):
    pod: str
    container: str


SPEC_NO_GPU_REQUEST = Code("SPEC_NO_GPU_REQUEST", SpecNoGpuRequest)


def _gpu_taint_block(facts: Facts) -> list[str]:
    """GPU-resource taints (``nvidia.com/gpu=present``) that keep the pending pod off the GPU nodes
    its own selector picks: the toleration comes with a GPU request on GKE and AKS."""
    pod = facts.pending_pod
    if pod is None:
        return []
    lines = []
    for name, node in sorted(facts.nodes.items()):
        gpu_taints = [t for t in untolerated_taints(pod, node, include_unschedulable=False)
                      if is_gpu_resource(str(t.get("key") or ""))]
        if gpu_taints and node_matches(pod, node).ok:
            lines.append(f"{name}: {', '.join(taint_str(t) for t in gpu_taints)} keeps it out")
    return lines


def run(facts: Facts) -> Iterator[Detection]:
    """SPEC_NO_GPU_REQUEST naming the containers and the signs that a GPU is expected."""
    pod = facts.pod
    if pod is None or pod_gpu_requests(pod):
        return
    hints = gpu_expectations(pod)
    if not hints:
        return
    containers = [str(c.get("name", "?")) for c in (pod.get("spec") or {}).get("containers") or []]
    blocked = _gpu_taint_block(facts)
    yield SPEC_NO_GPU_REQUEST.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "container": ", ".join(containers),
        },
        role="cause" if blocked else "",
        evidence=[f"container {c}: no GPU resource in requests or limits" for c in containers]
        + [f"expects a GPU: {h}" for h in hints]
        + [f"pending behind the GPU taint: {line}" for line in blocked[:10]],
    )


CHECK = Check(
    name="spec.gpu_request", reads=("pod", "pending_pod", "nodes"), emits=(SPEC_NO_GPU_REQUEST,), run=run
)
