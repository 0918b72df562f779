"""Who holds the GPUs of a full set of nodes, most idle first: "who has the cards" at a glance.

For each live GPU pod on the nodes: the cards it holds (from the kubelet checkpoint when the node
was read; a node's only GPU pod holds all its cards), their nvidia-smi utilisation and memory, and
how long the pod has existed. Idle holders (0 % for a notebook left open) come first; pods whose
cards could not be told come last, saying so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.engine.facts import Facts
from bot.probes.nvidia_smi import GpuRow
from bot.probes.slim import SlimPod

#: holders listed in the evidence; the rest are counted
MAX_HOLDERS = 12


@dataclass(frozen=True)
class Holder:
    """A live GPU pod and the cards it holds, so the list of who holds a full set of nodes can put
    the idle holders first."""

    pod: SlimPod
    cards: tuple[GpuRow, ...]

    @property
    def utilization(self) -> float | None:
        values = [g.utilization_gpu for g in self.cards if g.utilization_gpu is not None]
        return max(values) if values else None

    @property
    def memory(self) -> float | None:
        values = [g.memory_used_mib for g in self.cards if g.memory_used_mib is not None]
        return sum(values) if values else None

    def sort_key(self) -> tuple[int, float, float, str]:
        util = self.utilization
        # unknown readings last; then least used, least memory, oldest first
        return (1 if util is None else 0, util or 0.0, self.memory or 0.0, self.pod.created or "~")


def _age(created: str, now: datetime) -> str:
    try:
        at = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return ""
    seconds = int((now - (at if at.tzinfo else at.replace(tzinfo=UTC))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f", created {seconds // size}{unit} ago"
    return ""


def holders(facts: Facts, nodes: Iterable[str]) -> list[Holder]:
    """Live GPU pods on ``nodes`` with the cards they hold (empty when unknown), most idle first."""
    observed = facts.observations
    placed = facts.card_pods
    out = []
    for node in nodes:
        pods = [p for p in facts.node_pods.get(node, []) if p.live and p.gpu and not p.terminating]
        obs = observed.get(node)
        cards = {g.uuid: g for g in obs.gpus} if obs is not None else {}
        by_pod: dict[str, list[GpuRow]] = {}
        for uuid, entries in (placed.get(node) or {}).items():
            for pod, _how in entries:
                if uuid in cards:
                    by_pod.setdefault(pod.uid, []).append(cards[uuid])
        for p in pods:
            mine = by_pod.get(p.uid) or (list(cards.values()) if len(pods) == 1 else [])
            out.append(Holder(p, tuple(mine)))
    return sorted(out, key=Holder.sort_key)


def holder_lines(facts: Facts, nodes: Iterable[str], *, now: datetime | None = None) -> list[str]:
    """One evidence line per holder, most idle first, capped."""
    now = now or datetime.now(UTC)
    found = holders(facts, nodes)
    lines = []
    for h in found[:MAX_HOLDERS]:
        asks = ", ".join(f"{k}={v:g}" for k, v in sorted(h.pod.gpu.items()))
        if h.cards:
            util, mem = h.utilization, h.memory
            cards = ",".join(f"GPU{g.index}" for g in h.cards)
            reading = (f"{cards} util {'N/A' if util is None else f'{util:g}%'}, "
                       f"memory {'N/A' if mem is None else f'{mem:g} MiB'}")
        else:
            reading = "cards not known (node not read, or no checkpoint entry)"
        idle = " (idle)" if h.utilization == 0 else ""
        lines.append(f"holder {h.pod.ref} on {h.pod.node} [{asks}]: {reading}{idle}{_age(h.pod.created, now)}")
    if len(found) > MAX_HOLDERS:
        lines.append(f"… and {len(found) - MAX_HOLDERS} more holder(s)")
    return lines
