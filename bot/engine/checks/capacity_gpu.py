"""Live pods' requests fill the allocatable GPU resources on every node the pod could use.

Could use: the node offers what the pod asks, and the pod may land there (its selector and
affinity admit the node, it tolerates the node's taints, the node is not cordoned). A full node
the pod may not use anyway is not why it waits, and where no node is left the selector, taint or
cordon findings say why.

The evidence names who holds the cards, most idle first (``_holders``): a full cluster of idle
notebooks reads differently from one of busy training jobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.checks._holders import holder_lines
from bot.engine.checks._plugin import may_land
from bot.engine.facts import Facts
from bot.kube.resources import node_gpu_capacity, pod_node_gpu_requests


class CapacityExhausted(TypedDict):
    pod: str
    resource: str


CAPACITY_EXHAUSTED = Code("CAPACITY_EXHAUSTED", CapacityExhausted)


def run(facts: Facts) -> Iterator[Detection]:
    """CAPACITY_EXHAUSTED with the per-node table (allocatable, requested, free, asked)."""
    pod = facts.pending_pod
    if pod is None:
        return
    asks = pod_node_gpu_requests(pod)  # HAMi's gpumem/gpucores are per card, not node totals
    if not asks:
        return
    rows = []
    short: set[str] = set()
    fits_somewhere = False
    usable = sorted(name for name in facts.candidates if may_land(facts, pod, name))
    for name in usable:
        node = facts.candidates[name]
        caps = node_gpu_capacity(node)
        live = [p for p in facts.node_pods.get(name, []) if p.live]
        node_fits = True
        for resource, want in asks.items():
            _, allocatable = caps.get(resource, (0.0, 0.0))
            used = sum(p.gpu.get(resource, 0) for p in live)
            free = allocatable - used
            rows.append(
                f"{name}: {resource} allocatable {fmt_num(allocatable)}, requested {fmt_num(used)}, "
                f"free {fmt_num(free)}, pod asks {fmt_num(want)}"
            )
            if free < want:
                short.add(resource)
            node_fits = node_fits and free >= want
        fits_somewhere = fits_somewhere or node_fits
    if rows and not fits_somewhere:
        # who holds the cards, most idle first (nvidia-smi from the node reads, and age)
        held = holder_lines(facts, usable) if facts.gathered("node_readings") else []
        yield CAPACITY_EXHAUSTED.detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "resource": ", ".join(sorted(short)),
            },
            evidence=[*rows[:26], *held],
        )


CHECK = Check(
    name="capacity.gpu",
    reads=("pending_pod", "candidates", "node_pods"),
    # the holders' card readings sharpen the table; without them the table still stands
    refines=("observations", "card_pods"),
    emits=(CAPACITY_EXHAUSTED,),
    run=run,
)
