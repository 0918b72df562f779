"""Node-status's view of each asked or GPU node: missing, not Ready, or cordoned."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NotRequired, TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.facts import Facts
from bot.engine.node_rows import ready_condition, taint_texts
from bot.probes.observation import NodeObservation


class NodeNotFound(TypedDict):
    node: str
    nodes: str


NODE_NOT_FOUND = Code("NODE_NOT_FOUND", NodeNotFound)


class NodeNotReady(TypedDict):
    node: str
    reason: str
    kubelet_down: NotRequired[bool]


NODE_NOT_READY = Code("NODE_NOT_READY", NodeNotReady)


class NodeCordoned(TypedDict):
    node: str


NODE_CORDONED = Code("NODE_CORDONED", NodeCordoned)

#: what ``systemctl is-active`` prints for a unit that is not running; anything else (notably
#: "unknown" when the node agent has no access to the host's systemd) says nothing either way
KUBELET_DOWN_STATES = frozenset({"inactive", "failed", "deactivating"})


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_NOT_FOUND for an asked name, NODE_NOT_READY (with kubelet state), NODE_CORDONED."""
    known = sorted(facts.nodes)
    for name in facts.inv.nodes:
        if name not in facts.nodes:
            yield NODE_NOT_FOUND.detect(
                node_subject(name),
                {
                    "node": name,
                    "nodes": ", ".join(known[:20]) + (" …" if len(known) > 20 else ""),
                },
            )
    for name in facts.scope_nodes:
        node = facts.nodes[name]
        ready, reason = ready_condition(node)
        if not ready:
            evidence = [f"{name}: Ready condition: {reason}"]
            reading = facts.node_readings.get(name)
            kubelet = reading.kubelet if isinstance(reading, NodeObservation) else None
            if kubelet:
                from_lease = isinstance(reading, NodeObservation) and reading.kubelet_source == "lease"
                how = "the kubelet's Lease" if from_lease else "systemctl is-active kubelet on the node"
                evidence.append(f"{name}: {how}: {kubelet}")
            yield NODE_NOT_READY.detect(
                node_subject(name),
                {
                    "node": name,
                    "reason": reason,
                    "kubelet_down": kubelet in KUBELET_DOWN_STATES,
                },
                evidence=evidence,
            )
        if (node.get("spec") or {}).get("unschedulable"):
            taints = ", ".join(taint_texts(node)) or "none"
            yield NODE_CORDONED.detect(
                node_subject(name),
                {"node": name},
                evidence=[f"{name}: spec.unschedulable is true; taints: {taints}"],
            )


CHECK = Check(
    name="node.conditions",
    reads=("nodes", "scope_nodes", "node_readings"),
    emits=(NODE_NOT_FOUND, NODE_NOT_READY, NODE_CORDONED),
    run=run,
)
