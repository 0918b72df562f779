"""A hard topology spread constraint keeps the pod off the nodes that could take it.

The scheduler says only "N node(s) didn't match pod topology spread constraints"; this names the
constraint's topologyKey and maxSkew, and counts the matching pods per domain from the nodes and
the namespace's pods, so the reader sees which domain is too full and which nodes lack the key.
A GPU pool in one zone under a zone spread is the usual case: the only zone with GPUs already has
more replicas than the zones without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.topology_spread import SpreadResult, evaluate


class SchedTopologySpread(TypedDict):
    pod: str
    label: str
    value: str
    count: int
    what: str
    rule: str
    selector: str


SCHED_TOPOLOGY_SPREAD = Code("SCHED_TOPOLOGY_SPREAD", SchedTopologySpread)


def _what(allowed: list[str], empty: list[str], usable: list[str]) -> str:
    """What the spread leaves, short enough for a title."""
    if usable:
        return f"only {', '.join(usable[:3])} may take it"
    if empty:
        return f"only {', '.join(empty[:3])} allowed, and no node there offers what the pod asks"
    return "no domain may take it without exceeding maxSkew"


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_TOPOLOGY_SPREAD per constraint that blocks, or per constraint when the scheduler blames spread."""
    pod = facts.pending_pod
    if pod is None:
        return
    msg = facts.events.scheduling[0] if facts.events.scheduling else None
    blamed = [r for r in (msg.reasons if msg is not None else []) if r.category == "topology_spread"]
    said = bool(blamed) or (msg is not None and msg.prefilter_category == "topology_spread")
    results = evaluate(pod, facts.nodes, facts.peers)
    offers = set(facts.candidates)  # nodes offering the GPU resources the pod asks (all, if none)

    def usable(result: SpreadResult) -> list[str]:
        """Domains the spread allows that also have a node offering what the pod asks."""
        return [d.value for d in result.domains if d.allowed and offers.intersection(d.node_names)]

    for result in results:
        blocked = bool(result.domains) and not usable(result)
        if not (blocked or said):
            continue
        if not blocked and any(r.domains and not usable(r) for r in results):
            continue  # another constraint is the one that blocks
        allowed = [d.value for d in result.domains if d.allowed]
        empty = [v for v in allowed if v not in usable(result)]
        evidence = []
        if msg is not None and said:
            evidence.append(f"scheduler: {msg.raw[:600]}")
        evidence.append(f"constraint: topologyKey {result.topology_key}, maxSkew {result.max_skew}, "
                        f"whenUnsatisfiable DoNotSchedule, selector {result.selector}"
                        + (f", minDomains {result.min_domains}" if result.min_domains else ""))
        for d in result.domains[:12]:
            verdict = "would exceed maxSkew" if not d.allowed else (
                "allowed, but no node there offers what the pod asks" if d.value in empty else "allowed")
            evidence.append(f"  {result.topology_key}={d.value}: {d.count} matching pod(s) on {d.nodes} node(s), "
                            f"{verdict}")
        if result.unlabelled:
            evidence.append(f"  {len(result.unlabelled)} node(s) without label {result.topology_key} are not "
                            f"counted and cannot take the pod: {', '.join(result.unlabelled[:6])}")
        yield SCHED_TOPOLOGY_SPREAD.detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "label": result.topology_key,
                "value": result.describe(),
                "count": sum(r.count for r in blamed),
                "what": _what(allowed, empty, usable(result)),
                "rule": f"maxSkew {result.max_skew}",
                "selector": result.selector,
            },
            role="" if blocked else "partial",
            evidence=evidence,
        )


CHECK = Check(
    name="sched.topology_spread",
    reads=("pending_pod", "events", "nodes", "peers", "candidates"),
    emits=(SCHED_TOPOLOGY_SPREAD,),
    run=run,
)
