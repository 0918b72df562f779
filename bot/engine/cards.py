"""Card-level facts derived from node readings: the working verdict of every card, and which pods
sit on which card. Shared by node-status's table and the card checks, computed once per question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.engine.working import Verdict, card_readings, classify_card, profiles_from, thresholds_from
from bot.kube.resources import QGPU_CORE
from bot.probes.nvidia_smi import GpuRow
from bot.probes.observation import NodeObservation
from bot.probes.slim import SlimPod

FROM_CHECKPOINT = "card from the kubelet checkpoint's entry for the pod"
INFERRED = (
    "card inferred: the node's only running qGPU pod and its only card with processes "
    "(the API does not say which card a slice is on)"
)

#: one node's cards, each with its "really working" verdict
NodeVerdicts = list[tuple[GpuRow, Verdict]]
CardVerdicts = dict[str, NodeVerdicts]
#: card UUID -> [(live GPU pod, how the card was found)] of one node
Placed = dict[str, list[tuple[SlimPod, str]]]
CardPods = dict[str, Placed]


@dataclass(frozen=True)
class EarlyNode:
    """One node's card work, done as its reading arrived (``EarlyVerdicts``); it stands for that
    very reading (and, for ``placed``, that very list of the node's pods) and no other."""

    reading: NodeObservation
    #: the cards' verdicts (None without the runbook's working tables)
    verdicts: list[tuple[GpuRow, Verdict]] | None
    #: the node's entry of ``node_pods`` the placement was worked out from (None: it had none)
    pods: list[SlimPod] | None
    placed: Placed


#: node -> its card work, done while the other nodes were being read
EarlyCards = dict[str, EarlyNode]


class WorkingRules:
    """The runbook's ``working_signals`` and ``working_profiles`` tables, read once per question."""

    def __init__(self, signals: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]]) -> None:
        self.thresholds = thresholds_from(signals)
        self.profiles = profiles_from(profiles)

    def node(self, obs: NodeObservation) -> list[tuple[GpuRow, Verdict]]:
        """[(card, verdict)] of one node's reading."""
        procs = Counter(p.gpu_uuid for p in obs.processes if p.gpu_uuid)
        return [
            (g, classify_card(card_readings(g), self.thresholds, self.profiles, utilization=g.utilization_gpu,
                              processes=procs[g.uuid] if g.uuid else 0))
            for g in obs.gpus
        ]


class EarlyVerdicts:
    """Card verdicts and placements worked out as each node's reading arrives, in the fan-out's
    idle moments, rather than all after it (500 nodes' cards cost ~0.05 s that the asker would
    otherwise wait for after the last node). The node-readings loader feeds it and puts ``done``
    beside its fact. Both rest only on what the read itself gave (the cards, their processes, the
    checkpoint), never on what is added to a reading after the fan-out (the kubelet's state from
    its Lease, dcgm-exporter's notes)."""

    def __init__(self, signals: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]],
                 node_pods: Mapping[str, list[SlimPod]] | None = None) -> None:
        self.signals, self.profiles = signals, profiles
        self.node_pods = node_pods if node_pods is not None else {}
        self._rules: WorkingRules | None = None
        self.done: EarlyCards = {}

    def answered(self, node: str, result: object) -> None:
        """One node's reading is in: its cards' verdicts (where the runbook has working tables)
        and which pods sit on which card, now."""
        if not isinstance(result, NodeObservation):
            return
        verdicts = None
        if self.signals:
            if self._rules is None:
                self._rules = WorkingRules(self.signals, self.profiles)
            verdicts = self._rules.node(result)
        pods = self.node_pods.get(node)
        self.done[node] = EarlyNode(result, verdicts, pods, node_card_pods(result, pods or []))


def card_verdicts(
    observed: Mapping[str, NodeObservation],
    signals: Sequence[Mapping[str, Any]],
    profiles: Sequence[Mapping[str, Any]],
    *,
    early: Mapping[str, EarlyNode] | None = None,
) -> CardVerdicts:
    """node -> [(card, verdict)] from the runbook's ``working_signals`` and ``working_profiles``.

    ``early``: verdicts already worked out while the other nodes were still being read (kept
    only where they are of the very reading in ``observed``)."""
    rules = WorkingRules(signals, profiles)
    early = early or {}
    out: CardVerdicts = {}
    for node, obs in sorted(observed.items()):
        done = early.get(node)
        kept = done.verdicts if done is not None and done.reading is obs else None
        out[node] = kept if kept is not None else rules.node(obs)
    return out


def _visible_devices(env: Mapping[str, str]) -> list[str]:
    value = env.get("NVIDIA_VISIBLE_DEVICES", "")
    return [v.strip() for v in value.split(",") if v.strip() and v.strip() not in ("all", "none", "void")]


def _match_card(ident: str, gpus: Sequence[GpuRow]) -> GpuRow | None:
    """The card a NVIDIA_VISIBLE_DEVICES item names: exact UUID, index, or a unique UUID prefix."""
    exact = [g for g in gpus if g.uuid == ident or (ident.isdigit() and g.index == int(ident))]
    if exact:
        return exact[0]
    prefixed = [g for g in gpus if g.uuid and g.uuid.startswith(ident) and len(ident) >= 8]
    return prefixed[0] if len(prefixed) == 1 else None


def gone_holders(obs: NodeObservation, live_uids: set[str]) -> dict[str, list[str]]:
    """card UUID -> UIDs of checkpoint entries whose pod is not among ``live_uids`` (a zombie's
    cards, where the checkpoint ties its devices to a card); where the cards of such an entry
    cannot be told (a qGPU slice's device IDs name no card), its UID is under ""."""
    out: dict[str, list[str]] = {}
    entries = obs.checkpoint.entries if obs.checkpoint is not None else []
    for uid in sorted({e.pod_uid for e in entries} - live_uids):
        for key in [c.uuid for c in _checkpoint_cards(obs, uid)] or [""]:
            out.setdefault(key, []).append(uid)
    return out


def _checkpoint_cards(obs: NodeObservation, uid: str) -> list[GpuRow]:
    """Cards the kubelet checkpoint gives a pod: NVIDIA_VISIBLE_DEVICES of its allocation, or
    device IDs that are card UUIDs (the NVIDIA device plugin's IDs)."""
    entries = obs.checkpoint.entries if obs.checkpoint is not None else []
    cards: list[GpuRow] = []
    for e in entries:
        if e.pod_uid != uid:
            continue
        cards += [c for i in _visible_devices(e.alloc_env) if (c := _match_card(i, obs.gpus))]
        cards += [g for g in obs.gpus if g.uuid and g.uuid in e.device_ids]
    return list({c.uuid: c for c in cards}.values())


def card_pods(observed: Mapping[str, NodeObservation], node_pods: Mapping[str, list[SlimPod]],
              *, early: Mapping[str, EarlyNode] | None = None) -> CardPods:
    """node -> card UUID -> [(live GPU pod, how the card was found)] (``node_card_pods``).

    ``early``: placements already worked out while the other nodes were still being read (kept
    only where they are of the very reading and the very pod list at hand)."""
    early = early or {}
    out: CardPods = {}
    for node, obs in observed.items():
        done = early.get(node)
        pods = node_pods.get(node)
        if done is not None and done.reading is obs and done.pods is pods:
            out[node] = done.placed
        else:
            out[node] = node_card_pods(obs, pods or [])
    return out


def node_card_pods(obs: NodeObservation, pods: Sequence[SlimPod]) -> Placed:
    """card UUID -> [(live GPU pod, how the card was found)] of one node.

    The API does not say which card a pod (least of all a qGPU slice) landed on. First choice:
    the kubelet checkpoint's entry for the pod's UID. Fallback, for qGPU only: when a node has
    exactly one running qGPU pod left unplaced and exactly one card with processes, that pod is
    taken to be on that card.
    """
    placed: Placed = {}
    unplaced = []
    for p in (p for p in pods if p.live and p.gpu):
        cards = _checkpoint_cards(obs, p.uid)
        for c in cards:
            placed.setdefault(c.uuid, []).append((p, FROM_CHECKPOINT))
        if not cards and p.phase == "Running" and not p.terminating and p.gpu.get(QGPU_CORE):
            unplaced.append(p)
    active = [g for g in obs.gpus if any(q.gpu_uuid == g.uuid for q in obs.processes)]
    if len(unplaced) == 1 and len(active) == 1:
        placed.setdefault(active[0].uuid, []).append((unplaced[0], INFERRED))
    return placed
