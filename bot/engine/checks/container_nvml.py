"""NVML "Unknown Error" inside the container while /dev/nvidia* exist: the device cgroup was lost
(a host ``systemctl daemon-reload`` under runc's systemd cgroup driver), with the file-time skew."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._container import (
    NVML_UNKNOWN,
    chain_evidence,
    device_lines,
    human_delta,
    label,
    nvml_lost,
    started_at,
)
from bot.engine.facts import Facts
from bot.kube.objects import owner_refs_of
from bot.probes.devices import device_time_skew


class NvmlCgroupLost(TypedDict):
    pod: str
    namespace: str
    pod_name: str
    container: str
    skew: str
    owned: bool


NVML_CGROUP_LOST = Code("NVML_CGROUP_LOST", NvmlCgroupLost)


def run(facts: Facts) -> Iterator[Detection]:
    """NVML_CGROUP_LOST per container, offering a graceful delete of the pod."""
    ex, pod = facts.containers, facts.pod
    if ex is None or pod is None:
        return
    owned = any(r.get("controller") for r in owner_refs_of(pod))
    for view in ex.containers:
        if not nvml_lost(view):
            continue
        skew = device_time_skew(view.devices)
        skew_text = human_delta(skew) if skew is not None else "an unmeasurable amount"
        evidence = [f"nvidia-smi in {view.container}: {NVML_UNKNOWN} (exit {view.out('nvidia_smi').exit_code})"]
        evidence += device_lines(view)
        if skew is not None:
            evidence.append(f"time skew between the card files (nvidiaN) and nvidiactl/nvidia-uvm: {skew_text}")
        started = started_at(pod, view.container)
        if started is not None:
            newest = max(d.mtime for d in view.devices)
            if newest > started:
                evidence.append(f"device files changed {human_delta(newest - started)} after the container "
                                f"started ({started.isoformat()}): they were re-attached while it ran")
        if view.driver_version:
            evidence.append(f"/proc/driver/nvidia/version still reads driver {view.driver_version}")
        evidence += [e for e in chain_evidence(facts, ex, view) if e not in evidence]
        yield NVML_CGROUP_LOST.detect(
            pod_subject(pod),
            {
                "pod": label(ex, view),
                "namespace": ex.namespace,
                "pod_name": ex.pod,
                "container": view.container,
                "skew": skew_text,
                "owned": owned,
            },
            evidence=evidence,
        )


CHECK = Check(name="container.nvml", reads=("containers", "pod"), emits=(NVML_CGROUP_LOST,), run=run)
