"""GPUs a node lost or that turned unhealthy, from the API, nvidia-smi, ECC counters and Xids.

A card that fell off the bus (Xid 79) or that the driver can no longer reach is GPU_LOST: only a
reboot brings it back, and until then the node offers fewer cards than it has. A card with
uncorrectable memory errors, a pending row remap or a serious Xid, or one the device plugin
withdrew (capacity above allocatable), is GPU_UNHEALTHY. Application Xids (13, 31, 43, 45: a
program's own fault) are not a card problem and give no finding.

node-status looks at every node in scope. why-pending looks at the nodes that matter to the asked
pod: its own node, the nodes whose kubelet rejected its workload's pods, and, for a pod still
waiting for a node, the candidates that offer what it asks (there only a lost or withdrawn card
counts, and only where the pod would fit with the card back: a card that still counts as
allocatable does not explain the wait).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Outcome, node_subject
from bot.engine.checks._gpu_health import CardProblem, NodeHealth, node_health_of, plugin_running, xid_rows
from bot.engine.facts import Facts, per_question
from bot.engine.per_node import PerNode
from bot.kube.objects import meta_of
from bot.kube.pod_status import CRASH_REASONS, classify
from bot.kube.resources import node_gpu_capacity, pod_gpu_requests
from bot.probes.observation import NodeObservation
from bot.report import Skipped


class GpuUnhealthy(TypedDict):
    node: str
    count: int
    cards: str
    what: str
    withdrawn: str
    restart_plugin: bool
    plugin_namespace: str
    plugin_pod: str
    cordon: bool


GPU_UNHEALTHY = Code("GPU_UNHEALTHY", GpuUnhealthy)


class GpuLost(TypedDict):
    node: str
    count: int
    cards: str
    what: str
    withdrawn: str
    cordoned: bool


GPU_LOST = Code("GPU_LOST", GpuLost)

#: how a node relates to the question -> the finding's role (why-pending weighs by it)
ROLE_OF_PLACE = {"rejected": "cause", "candidate": "cause", "bound": "", "": ""}
#: states of a pod on its node that a broken card explains (its containers start and die, or never
#: get their device); an image pull or a missing ConfigMap is not a card's doing
GPU_FAILURE_STATES = (CRASH_REASONS - {"OOMKilled"}) | {"NotReady", "ContainerCreating"}


def _scope(facts: Facts) -> dict[str, str]:
    """node -> how it relates to the question: ``rejected`` (its kubelet refused the target's pods),
    ``bound`` (the pod's node), ``candidate`` (offers what the pod, waiting for lack of GPUs, asks),
    "" (node-status)."""
    if not facts.inv.kind:
        return {n: "" for n in facts.scope_nodes}
    out: dict[str, str] = {r.node: "rejected" for r in facts.admission_rejected if r.node in facts.nodes}
    pod = facts.pod
    if pod is None:
        return out
    node = (pod.get("spec") or {}).get("nodeName")
    if node and str(node) in facts.nodes:
        out.setdefault(str(node), "bound")
    pending = facts.pending_pod
    short = any("insufficient_gpu" in m.categories for m in facts.events.scheduling[:1])
    if pending is not None and pod_gpu_requests(pending) and short:
        for name in facts.candidates:
            out.setdefault(name, "candidate")
    return out


def _would_fit(facts: Facts, health: NodeHealth, asks: dict[str, float]) -> bool:
    """The waiting pod, asking ``asks``, would fit on this node if its lost or withdrawn cards
    were back."""
    if facts.pending_pod is None:
        return False
    back = max(health.withdrawn_count, len(health.by_class("lost")))
    caps = node_gpu_capacity(facts.nodes.get(health.node) or {})
    live = [p for p in facts.node_pods.get(health.node, []) if p.live]
    short = False
    for resource, want in asks.items():
        free = caps.get(resource, (0.0, 0.0))[1] - sum(p.gpu.get(resource, 0) for p in live)
        if free < want:
            short = True
            if free + back < want:
                return False
    return short


def _summary(cards: list[CardProblem]) -> str:
    seen: list[str] = []
    for card in cards:
        for what in card.what:
            if what not in seen:
                seen.append(what)
    return "; ".join(seen[:4]) + (" …" if len(seen) > 4 else "")


def _evidence(health: NodeHealth, cards: list[CardProblem], facts: Facts) -> list[str]:
    lines = []
    if health.withdrawn:
        lines.append(f"{health.node} in the API: {health.withdrawn_text()} (the device plugin withdrew cards)")
    for card in cards:
        lines += [f"{health.node} {card.label}: {e}" for e in card.evidence[:6]]
    row = health.xid_row
    if row is not None and any(c.cls == str(row.get("class")) for c in cards):
        lines.append(
            f"Xid {row.get('xid')} ({row.get('name', '')}): {row.get('meaning', '')}. Next: {row.get('action', '')}"
        )
    if health.hardware_clean:
        lines.append(
            f"{health.node} on the host: nvidia-smi reads all {health.cards_read} card(s); no uncorrectable ECC error, "
            f"pending remap or retirement; no Xid in the kernel log ({health.kernel_source})"
        )
    lines += [f"{health.node} (application, not the card): {x}" for x in health.app_xids[:3]]
    if health.unread:
        lines.append(f"{health.node}: physical checks incomplete ({health.unread})")
    for pod in health.plugin_pods[:2]:
        meta, status = meta_of(pod), pod.get("status") or {}
        lines.append(
            f"device plugin on {health.node}: {meta.get('namespace')}/{meta.get('name')} {status.get('phase', '?')}"
        )
    return lines


def _failing_on_card(facts: Facts) -> bool:
    """The asked pod runs on its node in a state a broken card explains (see GPU_FAILURE_STATES)."""
    pod = facts.pod
    if pod is None or not pod_gpu_requests(pod):
        return False
    state = classify(pod)
    return not state.ready and (state.reason in GPU_FAILURE_STATES or state.display_status in GPU_FAILURE_STATES)


def _cordoned(facts: Facts, name: str) -> bool:
    return bool((facts.nodes.get(name, {}).get("spec") or {}).get("unschedulable"))


#: the Xid table keyed for lookups, once a question (not once a node)
_xids = per_question(xid_rows)


@PerNode
def _health(facts: Facts, name: str, reading: NodeObservation) -> NodeHealth:
    """One read node's GPU health, worked out as it answers."""
    return node_health_of(facts, name, reading, _xids(facts))


def run(facts: Facts) -> Iterator[Outcome]:
    """GPU_LOST and GPU_UNHEALTHY per node in scope."""
    pending = facts.pending_pod if facts.inv.kind else None  # node-status has no target
    asks = pod_gpu_requests(pending) if pending is not None else {}  # once, not per node
    readings = facts.node_readings
    for name, place in sorted(_scope(facts).items()):
        reading = readings.get(name)
        health = (_health(facts, name, reading) if isinstance(reading, NodeObservation)
                  else node_health_of(facts, name, reading, _xids(facts)))
        if health.unread == "kernel log not readable":
            yield Skipped(f"Xid check on {name}", "the kernel log is not readable (journalctl and dmesg refused)")
        lost = health.by_class("lost")
        sick = health.by_class("reset", "watch")
        withdrawn_left = health.withdrawn_count > len(lost)
        if place == "candidate" and not _would_fit(facts, health, asks):
            # a waiting pod: only cards the scheduler no longer counts explain the wait, and only
            # where the pod would fit with them back
            continue
        role_for_pod = ROLE_OF_PLACE.get(place, "")
        if place == "bound" and _failing_on_card(facts):
            role_for_pod = "cause"  # the pod fails on a node whose card is broken: the card, not the container
        cordoned = _cordoned(facts, name)
        if lost:
            yield GPU_LOST.detect(
                node_subject(name),
                {
                    "node": name,
                    "count": len(lost),
                    "cards": ", ".join(c.label for c in lost[:8]),
                    "what": _summary(lost),
                    "withdrawn": health.withdrawn_text() or "none yet",
                    "cordoned": cordoned,
                },
                role=role_for_pod,
                evidence=_evidence(health, lost, facts),
            )
        if not sick and not (health.withdrawn and withdrawn_left):
            continue
        plugin = next((p for p in health.plugin_pods if plugin_running(p)), None)
        restart_plugin = bool(health.withdrawn and health.hardware_clean and plugin is not None)
        if health.withdrawn and withdrawn_left:
            role = role_for_pod or "withdrawn"
            what = _summary(sick) or f"the device plugin withdrew {health.withdrawn_text()}"
            if health.hardware_clean:
                what += "; the cards look healthy from the host"
        else:
            role = "reset" if any(c.cls == "reset" for c in sick) else "watch"
            if role == "reset" and role_for_pod == "cause":
                role = "cause"
            what = _summary(sick)
        meta = meta_of(plugin)
        yield GPU_UNHEALTHY.detect(
            node_subject(name),
            {
                "node": name,
                "count": len(sick) or health.withdrawn_count,
                "cards": ", ".join(c.label for c in sick[:8]) or "the withdrawn card(s)",
                "what": what,
                "withdrawn": health.withdrawn_text() or "none",
                "restart_plugin": restart_plugin,
                "plugin_namespace": str(meta.get("namespace") or ""),
                "plugin_pod": str(meta.get("name") or ""),
                "cordon": bool(sick) and any(c.cls == "reset" for c in sick) and not cordoned,
            },
            role=role,
            evidence=_evidence(health, sick, facts),
        )


CHECK = Check(
    name="health.gpus",
    reads=(
        "nodes", "scope_nodes", "node_readings", "node_pods", "components", "pod", "pending_pod",
        "candidates", "admission_rejected", "events",
    ),
    emits=(GPU_LOST, GPU_UNHEALTHY),
    run=run,
    tables=("xid_codes",),
    per_node=(_health,),
)
