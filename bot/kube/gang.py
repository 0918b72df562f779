"""Can a gang be placed? A first-fit-decreasing simulation over the nodes' free GPUs.

Why: a gang scheduler (Volcano, KAI) binds none of a pod group's pods until ``minMember`` of them
fit at once, so each pod's own message ("pod group is not ready") hides which one does not fit.
Placing the waiting pods, largest first, on the node with the least free room that still fits
them (best fit) says how many can be placed and which one cannot, with the largest free room
beside what it asks. GPU resources only: those are what GPU gangs wait for; the scheduler's own
message still covers CPU and memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.kube.objects import Obj, meta_of, name_of
from bot.kube.resources import node_gpu_capacity, pod_node_gpu_requests


@dataclass
class Placement:
    """How many waiting pods fit, which did not, and the free room per node at the start."""

    placed: list[tuple[str, str]] = field(default_factory=list)  # (pod, node)
    unplaced: list[tuple[str, dict[str, float]]] = field(default_factory=list)  # (pod, asks)
    free: dict[str, dict[str, float]] = field(default_factory=dict)

    def largest_free(self, resource: str) -> tuple[str, float]:
        """(node, free) of the node with the most free ``resource`` before placing the gang."""
        best = ("", 0.0)
        for node, room in sorted(self.free.items()):
            if room.get(resource, 0.0) > best[1]:
                best = (node, room.get(resource, 0.0))
        return best


def free_gpus(nodes: Mapping[str, Obj], used: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """node -> GPU resource -> allocatable minus what live pods request there."""
    out: dict[str, dict[str, float]] = {}
    for name, node in nodes.items():
        caps = node_gpu_capacity(node)
        out[name] = {r: alloc - used.get(name, {}).get(r, 0.0) for r, (_, alloc) in caps.items()}
    return out


def place(waiting: Sequence[Obj], free: dict[str, dict[str, float]]) -> Placement:
    """Best-fit-decreasing placement of ``waiting`` pods (their GPU requests) on ``free``."""
    result = Placement(free={n: dict(r) for n, r in free.items()})
    room = {n: dict(r) for n, r in free.items()}

    def size(pod: Obj) -> float:
        return sum(pod_node_gpu_requests(pod).values())

    for pod in sorted(waiting, key=lambda p: (-size(p), name_of(p))):
        asks = pod_node_gpu_requests(pod)
        name = str(meta_of(pod).get("name", "?"))
        fits = [n for n, r in room.items() if all(r.get(res, 0.0) >= want for res, want in asks.items())]
        if not fits:
            result.unplaced.append((name, asks))
            continue
        best = min(fits, key=lambda n: (sum(room[n].get(r, 0.0) for r in asks), n))
        for res, want in asks.items():
            room[best][res] = room[best].get(res, 0.0) - want
        result.placed.append((name, best))
    return result
