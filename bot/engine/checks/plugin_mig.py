"""The pod's GPU request and the nodes' MIG layout do not fit together.

The device plugin's MIG strategy decides the resource names: "mixed" advertises each MIG profile
as nvidia.com/mig-<profile> (and no nvidia.com/gpu for MIG-enabled cards), "single" advertises the
slices as plain nvidia.com/gpu, and with MIG off there are only whole nvidia.com/gpu cards. A pod
asking nvidia.com/gpu on mixed-strategy nodes, or nvidia.com/mig-2g.20gb where the layout has
only 1g.10gb slices (or MIG is off), waits forever with an "Insufficient" message that reads like
a busy cluster. The MIG manager's nvidia.com/mig.config.state label says when a requested layout
is still being applied (pending, rebooting) or could not be (failed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.checks._plugin import eligible_nodes, gpu_machines, nodes_text
from bot.engine.facts import Facts
from bot.kube.gpu_stack import (
    GPU,
    MIG_BAD_STATES,
    MIG_CONFIG,
    MIG_CONFIG_STATE,
    MIG_STRATEGY,
    allocatable,
    is_mig_resource,
    mig_labels,
    mig_layout,
    offered,
    operator_operands,
)
from bot.kube.objects import namespace_of
from bot.kube.resources import pod_gpu_requests


class MigStrategyMismatch(TypedDict):
    namespace: str
    pod: str
    resource: str
    requested: str
    what: str
    value: str
    strategy: str
    nodes: str
    node: str
    count: int
    state: str


MIG_STRATEGY_MISMATCH = Code("MIG_STRATEGY_MISMATCH", MigStrategyMismatch)


def _offers(facts: Facts, names: list[str]) -> str:
    found = sorted({f"{r}" for n in names for r in offered(facts.nodes[n])})
    return ", ".join(found) or "no NVIDIA resource"


def _node_line(facts: Facts, name: str) -> str:
    node = facts.nodes[name]
    offers = ", ".join(f"{r}: {fmt_num(a)}" for r, a in sorted(offered(node).items())) or "nothing allocatable"
    labels = ", ".join(f"{k}={v}" for k, v in sorted(mig_labels(node).items())) or "no MIG labels"
    return f"{name}: offers {offers}; {labels}"


def _bad_state(facts: Facts, names: list[str]) -> list[str]:
    return [n for n in names if mig_labels(facts.nodes[n]).get(MIG_CONFIG_STATE, "").lower() in MIG_BAD_STATES]


def _strategy(facts: Facts, names: list[str]) -> str:
    values = sorted({mig_labels(facts.nodes[n]).get(MIG_STRATEGY, "") for n in names} - {""})
    if values:
        return ", ".join(values)
    layouts = sorted({mig_layout(facts.nodes[n]) for n in names} - {"unknown"})
    return ", ".join(layouts) or "unknown"


def _mig_manager_namespace(facts: Facts) -> str:
    manager = operator_operands(facts.components.controllers).get("mig-manager")
    return (namespace_of(manager) or "gpu-operator")


def _pending(facts: Facts) -> Iterator[Detection]:
    pod = facts.pending_pod
    if pod is None:
        return
    eligible = eligible_nodes(facts, pod)
    ref = pod_ref(pod)
    for resource, want in sorted(pod_gpu_requests(pod).items()):
        if resource != GPU and not is_mig_resource(resource):
            continue
        if any(allocatable(facts.nodes[n], resource) > 0 for n in eligible):
            continue  # someone offers it: a busy cluster or another cause, not the layout
        layouts = {n: mig_layout(facts.nodes[n]) for n in eligible}
        stuck = _bad_state(facts, eligible)
        if resource == GPU:
            nodes = [n for n, layout in layouts.items() if layout == "mixed"]
            what = f"{resource} asked, mixed-strategy MIG nodes offer {_offers(facts, nodes)}"
        else:
            mixed = [n for n, layout in layouts.items() if layout == "mixed"]
            whole = [n for n, layout in layouts.items() if layout in ("single", "none")]
            nodes = mixed + whole
            where = "the MIG layout offers" if mixed else "the nodes offer only"
            what = f"{resource} asked, {where} {_offers(facts, nodes)}"
        if not nodes and stuck:
            nodes = stuck
            what = f"{resource} asked while the MIG layout is not applied"
        if stuck:
            states = sorted({mig_labels(facts.nodes[n]).get(MIG_CONFIG_STATE, "") for n in stuck})
            what += f"; {MIG_CONFIG_STATE} is {'/'.join(states)}"
        if not nodes:
            continue
        nodes = sorted(set(nodes) | set(stuck))
        evidence = [f"{ref} asks {resource}: {fmt_num(want)}", *(_node_line(facts, n) for n in nodes[:20])]
        yield MIG_STRATEGY_MISMATCH.detect(
            pod_subject(pod),
            {
                "namespace": _mig_manager_namespace(facts),
                "pod": ref,
                "resource": resource,
                "requested": fmt_num(want),
                "what": what,
                "value": _offers(facts, nodes),
                "strategy": _strategy(facts, nodes),
                "nodes": nodes_text(nodes),
                "node": nodes[0],
                "count": len(nodes),
                "state": ", ".join(sorted({mig_labels(facts.nodes[n]).get(MIG_CONFIG_STATE, "") for n in nodes} - {""}))
            or "not labelled",
            },
            evidence=evidence,
        )


def _nodes(facts: Facts) -> Iterator[Detection]:
    for name in _bad_state(facts, gpu_machines(facts, facts.scope_nodes)):
        labels = mig_labels(facts.nodes[name])
        config, state = labels.get(MIG_CONFIG, "(none)"), labels.get(MIG_CONFIG_STATE, "")
        yield MIG_STRATEGY_MISMATCH.detect(
            node_subject(name),
            {
                "pod": "",
                "resource": "nvidia.com/mig-*",
                "requested": "",
                "what": f"{MIG_CONFIG}={config} not applied, {MIG_CONFIG_STATE} is {state}",
                "value": _offers(facts, [name]),
                "strategy": _strategy(facts, [name]),
                "nodes": name,
                "node": name,
                "count": 1,
                "state": state,
                "namespace": _mig_manager_namespace(facts),
            },
            evidence=[_node_line(facts, name)],
        )


def run(facts: Facts) -> Iterator[Detection]:
    """MIG_STRATEGY_MISMATCH for a pending pod's request, or per node whose MIG layout is stuck."""
    yield from (_pending(facts) if facts.inv.kind else _nodes(facts))


CHECK = Check(
    name="plugin.mig",
    reads=("pending_pod", "nodes", "components", "scope_nodes"),
    emits=(MIG_STRATEGY_MISMATCH,),
    run=run,
)
