"""Node-status's table: per GPU node, the API's logical allocation beside the physical truth.

Built from facts after the checks ran; it judges nothing (findings do that), it lays the numbers
side by side so a person can see what the findings rest on.
"""

from __future__ import annotations

from collections import Counter

from bot.engine.cards import gone_holders
from bot.engine.checks._common import fmt_num
from bot.engine.facts import Facts
from bot.engine.working import Verdict
from bot.errors import NodeProbeError
from bot.kube.gpu import is_gpu_component
from bot.kube.objects import Obj, meta_of
from bot.kube.resources import node_gpu_capacity
from bot.probes.nvidia_smi import GpuRow
from bot.probes.observation import NodeObservation
from bot.probes.slim import SlimPod
from bot.report import CardRow, NodeRow

#: the facts the table reads (the runner gathers them when a runbook asks for the table)
READS: tuple[str, ...] = ("nodes", "scope_nodes", "node_pods", "components", "node_readings", "card_verdicts",
                          "card_pods")


def ready_condition(node: Obj) -> tuple[bool, str]:
    """(Ready is True, the condition's reason or a description of why not)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            status = str(cond.get("status"))
            return status == "True", str(cond.get("reason") or f"Ready={status}")
    return False, "no Ready condition reported"


def taint_texts(node: Obj) -> list[str]:
    out = []
    for t in (node.get("spec") or {}).get("taints") or []:
        value = f"={t['value']}" if t.get("value") else ""
        out.append(f"{t.get('key')}{value}:{t.get('effect')}")
    return out


def _pod_line(p: SlimPod) -> str:
    asks = ", ".join(f"{k.rsplit('/', 1)[-1]}={fmt_num(v)}" for k, v in sorted(p.gpu.items()))
    return f"{p.ref} [{'Terminating' if p.terminating else p.phase}] {asks}"


def _components(on_node: list[Obj], pods: list[SlimPod]) -> list[str]:
    """State of the GPU-stack pods (device plugin, qGPU manager, operator operands) on this node
    (``on_node``: ``GpuComponents.pods_on``, grouped once per report)."""
    seen: set[str] = set()
    out = []
    for obj in on_node:
        meta, status = meta_of(obj), obj.get("status") or {}
        ref = f"{meta.get('namespace')}/{meta.get('name')}"
        ready = all(c.get("ready") for c in status.get("containerStatuses") or [{}])
        state = "Terminating" if meta.get("deletionTimestamp") else str(status.get("phase") or "Pending")
        out.append(f"{ref} [{state}{'' if ready or state != 'Running' else ', not ready'}]")
        seen.add(ref)
    out += [f"{p.ref} [{'Terminating' if p.terminating else p.phase}]" for p in pods
            if p.ref not in seen and is_gpu_component(p.name)]
    return out


def _logical(node: Obj, pods: list[SlimPod]) -> dict[str, dict[str, float]]:
    live = [p for p in pods if p.live]
    return {
        res: {"capacity": cap, "allocatable": alloc, "requested": sum(p.gpu.get(res, 0.0) for p in live)}
        for res, (cap, alloc) in node_gpu_capacity(node).items()
    }


def _fill_physical(row: NodeRow, result: NodeObservation | NodeProbeError | None, pods: list[SlimPod],
                   verdicts: list[tuple[GpuRow, Verdict]], placed: dict[str, list[tuple[SlimPod, str]]]) -> None:
    """The node's reading beside its row: one card row per card nvidia-smi listed (built for
    every card of every node of a fleet-wide node-status: positional, one lookup each)."""
    if result is None:
        return
    if isinstance(result, NodeProbeError):
        row.ssh = result.reason
        return
    row.ssh, row.kubelet, row.driver = "ok", result.kubelet, result.driver_version
    row.cuda, row.driver_path = result.cuda_version, result.driver_path
    row.notes = result.notes[:10] + ([result.checkpoint_error] if result.checkpoint_error else [])
    gone = gone_holders(result, {p.uid for p in pods if p.live}) if result.checkpoint is not None else {}
    processes = Counter(p.gpu_uuid for p in result.processes if p.gpu_uuid)  # once a node, not once a card
    cards = row.gpus
    for g, verdict in verdicts:
        uuid = g.uuid
        held = placed.get(uuid)
        cards.append(CardRow(
            g.index, uuid, g.name, g.utilization_gpu, g.memory_used_mib, g.memory_total_mib, g.temperature_c,
            g.power_w, processes[uuid] if uuid else 0, verdict.state, [p.ref for p, _ in held] if held else [],
            gone.get(uuid, []) if gone else [],
        ))
    row.gone_holders = gone.get("", [])


def build_node_rows(facts: Facts) -> list[NodeRow]:
    rows = []
    readings, verdicts, placed = facts.node_readings, facts.card_verdicts, facts.card_pods
    for name in facts.scope_nodes:
        node = facts.nodes[name]
        pods = facts.node_pods.get(name, [])
        ready, _ = ready_condition(node)
        row = NodeRow(
            node=name,
            ready=ready,
            cordoned=bool((node.get("spec") or {}).get("unschedulable")),
            taints=taint_texts(node),
            logical=_logical(node, pods),
            pods=[_pod_line(p) for p in pods if p.gpu],
            components=_components(facts.components.pods_on(name), pods),
        )
        _fill_physical(row, readings.get(name), pods, verdicts.get(name, []), placed.get(name, {}))
        rows.append(row)
    if not rows and not facts.inv.nodes:
        facts.skip("node-status", "no GPU node found (no GPU resource, GPU label or GPU device-plugin pod)")
    return rows
