"""Node scoping shared by the device-plugin, operator, MIG and sharing checks (plugin.*).

Which nodes a GPU pod's resource should come from: GPU machines (by labels, advertised resources
or a GPU node agent running there), Ready, that the pod's node selection admits. For a node-level
command: the GPU machines in scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.engine.checks._common import fmt_num
from bot.engine.facts import Facts
from bot.engine.node_rows import ready_condition
from bot.kube.affinity import node_matches
from bot.kube.gpu import advertised_gpu_resources, gpu_labels
from bot.kube.resources import node_gpu_capacity
from bot.kube.scheduling import NOT_READY_TAINTS
from bot.kube.taints import UNSCHEDULABLE_TAINT_KEY, untolerated_taints

Obj = dict[str, Any]

#: node agents that run on every node, not only GPU machines
NOT_GPU_AGENTS = ("node-feature-discovery", "nfd-worker", "nfd-master", "nfd-gc")


def _agent_nodes(facts: Facts) -> set[str]:
    out = set()
    for p in facts.components.pods:
        meta = p.get("metadata") or {}
        name = str(meta.get("name", ""))
        owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, Mapping)]
        if any(x in name for x in NOT_GPU_AGENTS) or any(o.get("kind") != "DaemonSet" for o in owners):
            continue
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            out.add(str(node))
    return out


def gpu_machines(facts: Facts, names: list[str] | None = None) -> list[str]:
    """GPU machines among ``names`` (all nodes by default): a GPU label, an advertised GPU
    resource, or a GPU node agent (DaemonSet pod) running there. Sorted."""
    agents = _agent_nodes(facts)
    pool = facts.nodes if names is None else {n: facts.nodes[n] for n in names if n in facts.nodes}
    return sorted(
        n for n, node in pool.items() if gpu_labels(node) or advertised_gpu_resources(node) or n in agents
    )


def is_ready(node: Obj) -> bool:
    return ready_condition(node)[0]


def _blocking_taints(pod: Obj, node: Obj) -> list[dict[str, Any]]:
    return [t for t in untolerated_taints(pod, node, include_unschedulable=False)
            if t.get("key") != UNSCHEDULABLE_TAINT_KEY and t.get("key") not in NOT_READY_TAINTS]


def eligible_nodes(facts: Facts, pod: Obj) -> list[str]:
    """Ready GPU machines the pod's nodeSelector / required affinity admits; of those, the ones
    whose taints it tolerates when there are any (an untolerated taint is its own finding)."""
    selected = [n for n in gpu_machines(facts) if is_ready(facts.nodes[n]) and node_matches(pod, facts.nodes[n]).ok]
    tolerated = [n for n in selected if not _blocking_taints(pod, facts.nodes[n])]
    return tolerated or selected


def short_of(node: Obj, resource: str) -> bool:
    """The node offers none of ``resource``, or less than its capacity (cards marked unhealthy or a
    plugin that stopped: the kubelet keeps capacity and drops allocatable)."""
    capacity, alloc = node_gpu_capacity(node).get(resource, (0.0, 0.0))
    return alloc <= 0 or alloc < capacity


def offer_text(node: Obj, resource: str) -> str:
    capacity, alloc = node_gpu_capacity(node).get(resource, (0.0, 0.0))
    if resource not in node_gpu_capacity(node):
        return f"no {resource}"
    return f"{resource} allocatable {fmt_num(alloc)} of capacity {fmt_num(capacity)}"


def nodes_text(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
