"""A container built for a newer CUDA than the driver of the node it landed on.

Read without entering the container: the words CUDA, PyTorch and the NVIDIA runtime hook print
when the driver is too old (in the container's waiting or terminated message, or the kubelet's
event), or, for a container that does not run, the CUDA its image tag or ``NVIDIA_REQUIRE_CUDA``
names against the node driver's CUDA (nvidia-smi on the node, else GPU Feature Discovery's
labels). The same diagnosis as ``container.driver_cuda`` (DRIVER_TOO_OLD), which reads torch
inside a running container.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import event_time, pod_ref
from bot.engine.checks._container import older, version_tuple
from bot.engine.facts import Facts
from bot.kube.cuda_compat import CudaMessage, env_cuda, image_cuda, node_label_cuda, parse_message
from bot.kube.pod_status import classify
from bot.kube.resources import pod_gpu_requests
from bot.probes.observation import NodeObservation


class DriverTooOld(TypedDict):
    pod: str
    container: str
    node: str
    driver: str
    driver_cuda: str
    container_cuda: str | None


DRIVER_TOO_OLD = Code("DRIVER_TOO_OLD", DriverTooOld)

Obj = dict[str, Any]


def _messages(facts: Facts, pod: Obj) -> Iterator[tuple[str, str]]:
    """(where, text) of the container states and the pod's events, newest events first."""
    status = pod.get("status") or {}
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        for label, state in (("", cs.get("state") or {}), ("last run of ", cs.get("lastState") or {})):
            for kind in ("waiting", "terminated"):
                message = str((state.get(kind) or {}).get("message") or "")
                if message:
                    yield f"{label}container {cs.get('name')} ({kind})", message
    for event in sorted(facts.events.pod, key=event_time, reverse=True):
        yield f"event {event.get('reason')}", str(event.get("message") or "")


def _node_driver(facts: Facts, node: str) -> tuple[str, str, str]:
    """(driver, highest CUDA, where it was read) for ``node``: nvidia-smi there, else GFD labels."""
    reading = facts.node_readings.get(node) if facts.gathered("node_readings") else None
    if isinstance(reading, NodeObservation) and reading.cuda_version:
        return reading.driver_version or "", reading.cuda_version, f"nvidia-smi on {node}"
    driver, cuda = node_label_cuda(facts.nodes.get(node) or {})
    return driver, cuda, (f"GPU Feature Discovery labels on {node}" if cuda or driver else "")


def _image_asks(pod: Obj) -> tuple[str, str]:
    """(CUDA version, where it is named) from the GPU containers' env or image tags."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        version, var = env_cuda(container)
        if version:
            return version, f"container {container.get('name')} env {var}"
        tagged = image_cuda(str(container.get("image") or ""))
        if tagged:
            return tagged, f"image {container.get('image')}"
    return "", ""


def run(facts: Facts) -> Iterator[Detection]:
    """DRIVER_TOO_OLD from the container's words (role ``message``) or the image against the node (``image``)."""
    pod = facts.pod
    if pod is None or not (pod.get("spec") or {}).get("nodeName"):
        return
    state = classify(pod)
    if state.display_status == "Running" and state.ready:
        return
    node = str(pod["spec"]["nodeName"])
    driver, driver_cuda, read_at = _node_driver(facts, node)
    asks, named_at = _image_asks(pod)
    said: tuple[str, CudaMessage] | None = next(
        ((where, m) for where, text in _messages(facts, pod) if (m := parse_message(text)) is not None), None)
    evidence = []
    if said is not None:
        where, message = said
        evidence.append(f"{where}: {message.text[:600]}")
        asks = message.needs or asks
        driver_cuda = driver_cuda or message.driver_cuda
        role = "message"
    else:
        have, need = version_tuple(driver_cuda), version_tuple(asks)
        if not pod_gpu_requests(pod) or have is None or need is None or not older(have, need):
            return
        role = "image"
        evidence.append(f"{pod_ref(pod)} is {state.display_status}"
                        + (f": {state.detail[:300]}" if state.detail else ""))
    if asks:
        evidence.append(f"the container asks for CUDA {asks} ({named_at or 'in the runtime hook message'})")
    if driver_cuda:
        evidence.append(f"node {node}: driver {driver or '?'} supports CUDA up to {driver_cuda} "
                        f"({read_at or 'from the message'})")
    yield DRIVER_TOO_OLD.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "container": state.container or "",
            "node": node,
            "driver": driver or f"on {node}",
            "driver_cuda": driver_cuda or "(version not read)",
            "container_cuda": asks or (f"(not named, newer than {driver_cuda})" if driver_cuda else "(not named)"),
        },
        role=role,
        evidence=evidence,
    )


CHECK = Check(
    name="pod.cuda_driver",
    reads=("pod", "events", "nodes"),
    # the driver's CUDA as nvidia-smi prints it on the node; without it, the node's labels
    refines=("node_readings",),
    emits=(DRIVER_TOO_OLD,),
    run=run,
)
