"""Kubelet checkpoint entries whose pod UID no longer exists on that node, with the devices they pin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.facts import Facts
from bot.kube.resources import gpu_family


class CheckpointZombie(TypedDict):
    node: str
    count: int
    uids: str
    devices: int
    qgpu: bool


CHECKPOINT_ZOMBIE = Code("CHECKPOINT_ZOMBIE", CheckpointZombie)


def run(facts: Facts) -> Iterator[Detection]:
    """CHECKPOINT_ZOMBIE per node."""
    for node, obs in sorted(facts.observations.items()):
        if obs.checkpoint is None:
            continue
        live_uids = {p.uid for p in facts.node_pods.get(node, [])}
        dead = [e for e in obs.checkpoint.entries if e.pod_uid not in live_uids]
        if not dead:
            continue
        uids = sorted({e.pod_uid for e in dead})
        evidence = [
            f"{node}: PodUID {e.pod_uid} container {e.container} {e.resource}: {len(e.device_ids)} device(s) "
            + ", ".join(e.device_ids[:6])
            + (" …" if len(e.device_ids) > 6 else "")
            for e in dead[:20]
        ]
        evidence.append(
            f"{node}: no pod with these UIDs is bound to the node "
            f"(checked {len(live_uids)} pods); checkpoint format {obs.checkpoint.format}"
        )
        yield CHECKPOINT_ZOMBIE.detect(
            node_subject(node),
            {
                "node": node,
                "count": len(uids),
                "uids": ", ".join(uids[:5]),
                "devices": sum(len(e.device_ids) for e in dead),
                "qgpu": any(gpu_family(e.resource) == "qgpu" for e in dead),
            },
            evidence=evidence,
        )


CHECK = Check(name="checkpoint.zombies", reads=("observations", "node_pods"), emits=(CHECKPOINT_ZOMBIE,), run=run)
