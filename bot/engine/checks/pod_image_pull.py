"""A container whose image the kubelet cannot pull, with the registry's reason in plain words.

A pod stuck pulling its image is bound to a node and counts its GPUs as taken, while nothing runs
on them; read from the GPUs alone it looks like a leak or a full node. The pull error is the
cause, and the kubelet's own message (from the newest ``Failed to pull image`` event, or the
``ErrImagePull`` waiting message) says which: no such tag, credentials, rate limit, network.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.cuda_compat import image_cuda
from bot.kube.image_pull import pull_failures
from bot.kube.objects import namespace_of
from bot.kube.resources import pod_gpu_requests


class ImagePullFailed(TypedDict):
    pod: str
    container: str
    image: str
    reason: str
    what: str
    meaning: str
    look_at: str
    node: str
    namespace: str


IMAGE_PULL_FAILED = Code("IMAGE_PULL_FAILED", ImagePullFailed)


def run(facts: Facts) -> Iterator[Detection]:
    """IMAGE_PULL_FAILED for the first container waiting on its image (the others as evidence)."""
    pod = facts.pod
    if pod is None:
        return
    failures = pull_failures(pod, facts.events.pod)
    if not failures:
        return
    rows = {str(r.get("cause")): r for r in facts.table("image_pull_causes")}
    first = failures[0]
    row = rows.get(first.cause) or rows.get("other") or {}
    ref = pod_ref(pod)
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    evidence = [
        f"{'init container' if f.init else 'container'} {f.container}: {f.reason} pulling {f.image}"
        + (f": {f.message[:700]}" if f.message else "")
        for f in failures[:4]
    ]
    cuda = image_cuda(first.image)
    if cuda and first.cause == "not_found":
        evidence.append(f"the tag names CUDA {cuda}: image publishers retire old CUDA tags, so pick a tag that "
                        "exists and that the node driver supports")
    if node and pod_gpu_requests(pod):
        evidence.append(f"scheduled on {node}: the pod holds its GPU request there while nothing runs")
    yield IMAGE_PULL_FAILED.detect(
        pod_subject(pod),
        {
            "pod": ref,
            "container": first.container,
            "image": first.image,
            "reason": first.reason,
            "what": str(row.get("short", first.cause)),
            "meaning": str(row.get("meaning", "")),
            "look_at": str(row.get("look_at", "")),
            "node": node or "?",
            "namespace": namespace_of(pod),
        },
        role=first.cause,
        evidence=evidence,
    )


CHECK = Check(
    name="pod.image_pull", reads=("pod", "events"), emits=(IMAGE_PULL_FAILED,), run=run,
    tables=("image_pull_causes",),
)
