"""Node-status's table: per GPU node, the API's logical allocation beside the physical truth.

Built from facts after the checks ran; it judges nothing (findings do that), it lays the numbers
side by side so a person can see what the findings rest on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bot.engine.cards import EarlyNode, Placed, gone_holders
from bot.engine.checks._common import fmt_num
from bot.engine.facts import EARLY_NODE_ROWS, Facts
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


def _card_rows(row: NodeRow, result: NodeObservation, pods: list[SlimPod],
               verdicts: list[tuple[GpuRow, Verdict]], placed: Placed) -> None:
    """One card row per card nvidia-smi listed, and the node's untied gone holders (built for
    every card of every node of a fleet-wide node-status: positional, one lookup each).

    Reads only what the node's read itself gave (its cards, their processes, the checkpoint), so a
    row built as its node answered holds after the readings are completed (``EarlyRows``)."""
    gone = gone_holders(result, {p.uid for p in pods if p.live}) if result.checkpoint is not None else {}
    processes = Counter(p.gpu_uuid for p in result.processes if p.gpu_uuid)  # once a node, not once a card
    cards = row.gpus
    for g, verdict in verdicts:
        uuid = g.uuid
        held = placed.get(uuid)
        cards.append(CardRow(
            g.index, uuid, g.name, g.utilization_gpu, g.memory_used_mib, g.memory_total_mib, g.temperature_c,
            g.power_w, processes[uuid] if uuid else 0, verdict.state, tuple(p.ref for p, _ in held) if held else (),
            tuple(gone.get(uuid, ())) if gone else (),
        ))
    row.gone_holders = gone.get("", [])


def _reading_columns(row: NodeRow, result: NodeObservation | NodeProbeError | None) -> None:
    """The node's read state and the reading's own columns. Filled last, from the completed
    reading: the kubelet's state from its Lease and dcgm-exporter's notes come after the fan-out."""
    if result is None:
        return
    if isinstance(result, NodeProbeError):
        row.ssh = result.reason
        return
    row.ssh, row.kubelet, row.driver = "ok", result.kubelet, result.driver_version
    row.cuda, row.driver_path = result.cuda_version, result.driver_path
    row.notes = result.notes[:10] + ([result.checkpoint_error] if result.checkpoint_error else [])


def _api_row(facts: Facts, name: str, pods: list[SlimPod]) -> NodeRow:
    """The node's row as the API shows it (its allocation, pods and GPU-stack pods)."""
    node = facts.nodes[name]
    ready, _ = ready_condition(node)
    return NodeRow(
        node=name,
        ready=ready,
        cordoned=bool((node.get("spec") or {}).get("unschedulable")),
        taints=taint_texts(node),
        logical=_logical(node, pods),
        pods=[_pod_line(p) for p in pods if p.gpu],
        components=_components(facts.components.pods_on(name), pods),
    )


@dataclass(frozen=True)
class _EarlyRow:
    """A row built as its node answered, and the card work (reading, verdicts, placement, the
    node's pod list) it was built from, compared by identity."""

    row: NodeRow
    card: EarlyNode


class EarlyRows:
    """node-status's rows built as each node's reading arrives, in the fan-out's idle moments.

    At 500 nodes the table cost ~20 ms after the last node answered, all of it waited for; built
    as each node answers, only the reading's own columns are left for then (``build_node_rows``).
    A row is built from the API's facts (read before the fan-out began) and the node's card work
    (``bot.engine.cards.EarlyNode``), and is used only for that very reading, verdicts, placement
    and pod list. The node-readings loader feeds it where the runbook shows the table."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.done: dict[str, _EarlyRow] = {}

    def answered(self, node: str, card: EarlyNode | None) -> None:
        """``card``: the node's card work (``EarlyVerdicts.done``), None where there is none."""
        if card is None or card.verdicts is None or node not in self.facts.nodes:
            return
        pods = card.pods or []
        row = _api_row(self.facts, node, pods)
        _card_rows(row, card.reading, pods, card.verdicts, card.placed)
        self.done[node] = _EarlyRow(row, card)


def _early_row(facts: Facts, name: str, result: object, verdicts: object, placed: object) -> NodeRow | None:
    early: dict[str, _EarlyRow] | None = facts.beside(EARLY_NODE_ROWS)
    kept = early.get(name) if early else None
    if (kept is None or kept.card.reading is not result or kept.card.verdicts is not verdicts
            or kept.card.placed is not placed or kept.card.pods is not facts.node_pods.get(name)):
        return None
    return kept.row


def build_node_rows(facts: Facts) -> list[NodeRow]:
    rows = []
    readings, verdicts, placed = facts.node_readings, facts.card_verdicts, facts.card_pods
    for name in facts.scope_nodes:
        result = readings.get(name)
        row = _early_row(facts, name, result, verdicts.get(name), placed.get(name))
        if row is None:
            pods = facts.node_pods.get(name, [])
            row = _api_row(facts, name, pods)
            if isinstance(result, NodeObservation):
                _card_rows(row, result, pods, verdicts.get(name, []), placed.get(name, {}))
        _reading_columns(row, result)
        rows.append(row)
    if not rows and not facts.inv.nodes:
        facts.skip("node-status", "no GPU node found (no GPU resource, GPU label or GPU device-plugin pod)")
    return rows
