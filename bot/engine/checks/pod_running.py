"""A running pod: where it runs, and what nvidia-smi shows on *its* node.

The field notes' trap: the host you are logged in to is often not the pod's node, so its
nvidia-smi shows no load. The evidence is read on the pod's own node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.errors import NodeProbeError
from bot.kube.pod_status import classify


class PodRunning(TypedDict):
    pod: str
    node: str


POD_RUNNING = Code("POD_RUNNING", PodRunning)


def run(facts: Facts) -> Iterator[Detection]:
    """POD_RUNNING with its node's cards and processes."""
    pod = facts.pod
    if pod is None:
        return
    state = classify(pod)
    if not (state.display_status == "Running" and state.ready):
        return
    ref, node = pod_ref(pod), state.node or "?"
    evidence = [f"{ref} Running on {node}"]
    result = facts.node_readings.get(node)
    if isinstance(result, NodeProbeError):
        evidence.append(f"nvidia-smi on {node}: not available (ssh {result.reason})")
    elif result is not None:
        evidence += [
            f"{node} GPU{g.index} {g.name}: util {g.utilization_gpu}% mem {g.memory_used_mib}/"
            f"{g.memory_total_mib} MiB {g.temperature_c}C {g.power_w}W"
            for g in result.gpus
        ]
        evidence += [
            f"{node} pid {p.pid} {p.process_name} {p.used_memory_mib} MiB on {p.gpu_uuid}" for p in result.processes
        ]
    yield POD_RUNNING.detect(pod_subject(pod), {"pod": ref, "node": node}, evidence=evidence)


CHECK = Check(name="pod.running", reads=("pod", "node_readings"), emits=(POD_RUNNING,), run=run)
