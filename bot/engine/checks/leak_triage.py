"""The leak triage table: the API's allocation against nvidia-smi's activity, per observed node.

Allocated but physically idle with no live pod holding it (running, or bound and still starting)
= a leak (row 1); allocated with processes = a real allocation (row 2). Zombie checkpoint entries
count as allocation, and so does the qGPU scheduler's own view of used core when only one node
was observed. An allocation that is only the Terminating pods' own is no leak: those pods are in
the API and hold it until they are gone (``TERMINATING_HOLDS_GPU``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.checks._common import QGPU_CORE
from bot.engine.facts import Facts
from bot.engine.per_node import PerNode
from bot.kube.resources import gpu_family
from bot.probes.observation import NodeObservation


class LeakLogicalNotPhysical(TypedDict):
    node: str
    qgpu: bool


LEAK_LOGICAL_NOT_PHYSICAL = Code("LEAK_LOGICAL_NOT_PHYSICAL", LeakLogicalNotPhysical)


class AllocationReal(TypedDict):
    node: str
    pod: str


ALLOCATION_REAL = Code("ALLOCATION_REAL", AllocationReal)

#: memory a card uses with no process (driver/context overhead), MiB
IDLE_MEMORY_MIB = 64


def _idle(obs: NodeObservation) -> bool:
    return not obs.processes and all((g.memory_used_mib or 0) <= IDLE_MEMORY_MIB for g in obs.gpus)


def _scheduler_used_core(facts: Facts) -> float:
    if facts.pending_pod is None:
        return 0.0
    used = 0.0
    for msg in facts.events.scheduling[:1]:
        for reason in msg.reasons:
            if reason.qgpu is not None:
                used = max(used, sum(c.used_core for c in reason.qgpu.cards))
    return used


def run(facts: Facts) -> Iterator[Detection]:
    """LEAK_LOGICAL_NOT_PHYSICAL or ALLOCATION_REAL per node."""
    observed = facts.observations
    # the qGPU scheduler's own view of used core stands for the allocation of the one node observed
    qgpu_view = len(observed) == 1 and _scheduler_used_core(facts) > 0
    for node, obs in sorted(observed.items()):
        yield from (_triage(facts, node, obs, qgpu_view=True) if qgpu_view else _node_triage(facts, node, obs))


@PerNode
def _node_triage(facts: Facts, node: str, obs: NodeObservation) -> tuple[Detection, ...]:
    """One node's row of the table where the scheduler's view does not count, as it answers."""
    return tuple(_triage(facts, node, obs, qgpu_view=False))


def _triage(facts: Facts, node: str, obs: NodeObservation, *, qgpu_view: bool) -> Iterator[Detection]:
    """The node's row: a leak, a real allocation, or nothing to say."""
    all_pods = facts.node_pods.get(node, [])
    pods = [p for p in all_pods if p.live and p.gpu]
    allocated: dict[str, float] = {}
    for p in pods:
        for k, v in p.gpu.items():
            allocated[k] = allocated.get(k, 0) + v
    running = [p for p in pods if p.phase == "Running" and not p.terminating]
    # a live pod bound here that is still starting (pulling its image, waiting for a volume or
    # its sandbox) holds its GPU for real: the cards are idle because it has not started, so
    # that is its own story, never a leak
    starting = [p for p in pods if p.phase != "Running" and not p.terminating]
    live = {p.uid for p in all_pods}
    zombies = [e for e in obs.checkpoint.entries if e.pod_uid not in live] if obs.checkpoint else []
    zombie_uids = [e.pod_uid for e in zombies]
    has_allocation = bool(allocated) or bool(zombie_uids) or qgpu_view
    if not has_allocation or not obs.gpus:
        return
    if not zombie_uids and not qgpu_view and all(p.terminating for p in pods):
        # the API's allocation is the Terminating pods' own: they are still there and counted
        # until they are gone, their containers have stopped, so the cards are idle. Nothing is
        # remembered that should not be (TERMINATING_HOLDS_GPU tells that story and its fix);
        # calling it a leak offered a checkpoint clear for a pod stuck on its finalizer
        return
    alloc_text = ", ".join(f"{k}={v:g}" for k, v in sorted(allocated.items())) or "none by live pods"
    if zombie_uids:
        alloc_text += f"; checkpoint holds {len(zombie_uids)} entry(ies) of pods that no longer exist"
    physical = f"{len(obs.processes)} process(es), memory used " + ", ".join(
        f"GPU{g.index}={g.memory_used_mib or 0:g}MiB" for g in obs.gpus
    )
    if _idle(obs) and not running and not starting:
        yield LEAK_LOGICAL_NOT_PHYSICAL.detect(
            node_subject(node),
            {
                "node": node,
                # the qGPU manager's restart is offered where qGPU holds the cards, not for
                # an NVIDIA node's zombie entry
                "qgpu": any(QGPU_CORE in p.gpu for p in pods)
                or any(gpu_family(e.resource) == "qgpu" for e in zombies),
            },
            evidence=[f"{node} API allocation: {alloc_text}", f"{node} nvidia-smi: {physical}",
                      f"{node}: running GPU pods: none"],
        )
    elif obs.processes and allocated:
        yield ALLOCATION_REAL.detect(
            node_subject(node),
            {
                "node": node,
                "pod": ", ".join(p.ref for p in running[:5]) or "unknown (no running pod)",
            },
            evidence=[f"{node} API allocation: {alloc_text}", f"{node} nvidia-smi: {physical}"]
            + [f"pid {q.pid} {q.process_name} {q.used_memory_mib or 0:g}MiB on {q.gpu_uuid}"
               for q in obs.processes[:10]],
        )


CHECK = Check(
    name="leak.triage",
    reads=("observations", "node_pods", "pending_pod", "events"),
    emits=(LEAK_LOGICAL_NOT_PHYSICAL, ALLOCATION_REAL),
    run=run,
    per_node=(_node_triage,),
)
