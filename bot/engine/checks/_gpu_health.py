"""One node's GPU health from everything the bot can see: the API, nvidia-smi and the kernel log.

Shared by the GPU health check (GPU_LOST, GPU_UNHEALTHY) and the admission check, which needs to
know whether a rejected pod's node lost a card. The API side: the device plugin withdraws a card
it finds unhealthy, so the node's capacity exceeds its allocatable for that resource. The node
side: handle errors and [GPU is lost] / ERR! readings, fewer cards than the node had, Xid lines,
uncorrectable ECC errors and retirements or remappings waiting for a reset.

What an Xid means, and how bad it is, comes from the runbook's ``xid_codes`` table (``class``:
lost, reset, watch or app); this module only sorts the evidence by card.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.engine.facts import Facts
from bot.errors import NodeProbeError
from bot.kube.objects import Obj, labels_of, meta_of, name_of
from bot.kube.resources import node_gpu_capacity
from bot.probes.gpu_health import XidEvent
from bot.probes.observation import NodeObservation

#: severity classes, worst first
CLASSES = ("lost", "reset", "watch")
#: the GFD label with the number of physical cards (sharing multiplies nvidia.com/gpu)
COUNT_LABEL = "nvidia.com/gpu.count"


@dataclass
class CardProblem:
    """What is wrong with one card (or with a card nvidia-smi no longer lists)."""

    key: str
    label: str
    cls: str
    what: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def worse(self, cls: str) -> None:
        if CLASSES.index(cls) < CLASSES.index(self.cls):
            self.cls = cls


@dataclass
class NodeHealth:
    """What one node's reads say about its cards, kept per node so each finding can say which card
    is sick and whether the node was read at all, never concluding from a read that failed."""

    node: str
    #: GPU resource -> (capacity, allocatable) where the plugin withdrew cards
    withdrawn: dict[str, tuple[float, float]] = field(default_factory=dict)
    cards: dict[str, CardProblem] = field(default_factory=dict)
    #: application Xids (13, 31, 43, 45…): context, not a card problem
    app_xids: list[str] = field(default_factory=list)
    #: the node was read (nvidia-smi, ECC, kernel log); "" or why not
    unread: str = ""
    #: the physical reads all worked and showed nothing wrong
    hardware_clean: bool = False
    #: cards nvidia-smi listed, and where the kernel log came from (evidence of a clean host)
    cards_read: int = 0
    kernel_source: str = ""
    plugin_pods: list[Obj] = field(default_factory=list)
    #: the most telling Xid row of the table (its meaning and action), for the finding's words
    xid_row: Mapping[str, Any] | None = None

    def by_class(self, *classes: str) -> list[CardProblem]:
        return [c for c in self.cards.values() if c.cls in classes]

    @property
    def withdrawn_count(self) -> int:
        return int(sum(cap - alloc for cap, alloc in self.withdrawn.values()))

    def withdrawn_text(self) -> str:
        return ", ".join(
            f"{r} capacity {cap:g}, allocatable {alloc:g}" for r, (cap, alloc) in sorted(self.withdrawn.items())
        )


def xid_rows(facts: Facts) -> dict[str, Mapping[str, Any]]:
    """The ``xid_codes`` table keyed by the Xid as text (``other`` for the catch-all row)."""
    return {str(r.get("xid")).strip(): r for r in facts.table("xid_codes") if r.get("xid") is not None}


def _row(rows: Mapping[str, Mapping[str, Any]], xid: int) -> Mapping[str, Any]:
    return rows.get(str(xid)) or rows.get("other") or {"class": "watch", "name": f"Xid {xid}"}


def _label(obs: NodeObservation, pci: str, index: int | None = None) -> str:
    if index is None and pci:
        index = obs.index_of(pci)
    uuid = next((g.uuid for g in obs.gpus if index is not None and g.index == index), "")
    parts = [p for p in (pci, uuid) if p]
    if index is None:
        return f"the card at {pci}" if pci else "a card"
    return f"GPU{index} ({', '.join(parts)})" if parts else f"GPU{index}"


def _card(health: NodeHealth, obs: NodeObservation, pci: str, index: int | None, cls: str) -> CardProblem:
    # a card known by neither address nor index is a card of its own (never merged with another)
    key = pci or (f"index:{index}" if index is not None else f"unknown:{len(health.cards)}")
    card = health.cards.get(key)
    if card is None:
        card = health.cards[key] = CardProblem(key, _label(obs, pci, index), cls)
    card.worse(cls)
    return card


def _labelled_count(node: Obj) -> int | None:
    """The number of physical cards GPU feature discovery labelled the node with, if any."""
    labels = labels_of(node)
    try:
        return int(str(labels[COUNT_LABEL])) if labels.get(COUNT_LABEL) else None
    except ValueError:
        return None


def _unlisted_uuids(obs: NodeObservation) -> list[str]:
    """Cards the device plugin registered (kubelet checkpoint) that nvidia-smi no longer lists.

    Time-slicing registers ``GPU-…::N`` replicas, HAMi registers ``GPU-…-N`` split devices and
    MIG registers ``MIG-…`` devices: only what names a card counts, and a replica of a listed card
    is that card.
    """
    if obs.checkpoint is None:
        return []
    listed = {g.uuid for g in obs.gpus if g.uuid}
    registered = set()
    for ids in obs.checkpoint.registered.values():
        for device in ids:
            card = device.split("::")[0]
            if not card.startswith("GPU-") or card in listed:
                continue
            if any(card.startswith(uuid + "-") for uuid in listed):
                continue  # a vGPU split (HAMi: UUID-N) of a card nvidia-smi lists
            registered.add(card)
    return sorted(registered)



def _xids(health: NodeHealth, obs: NodeObservation, rows: Mapping[str, Mapping[str, Any]]) -> None:
    grouped: dict[tuple[str, int], list[XidEvent]] = {}
    for event in obs.xids:
        grouped.setdefault((event.pci, event.xid), []).append(event)
    worst: tuple[int, Mapping[str, Any]] | None = None
    for (pci, xid), events in sorted(grouped.items()):
        row = _row(rows, xid)
        cls = str(row.get("class") or "watch")
        last = events[-1]
        times = f"{len(events)}x, last {last.time}" if len(events) > 1 else last.time or "time unknown"
        who = f", pid {last.pid} {last.process}".rstrip() if last.pid or last.process else ""
        line = f"Xid {xid} ({row.get('name', '?')}) on {pci or '?'} [{times}{who}]: {last.text or last.raw}"
        if cls == "app":
            health.app_xids.append(line)
            continue
        if cls not in CLASSES:
            cls = "watch"
        card = _card(health, obs, pci, None, cls)
        card.what.append(f"Xid {xid} ({row.get('name', '?')})")
        card.evidence.append(line)
        rank = CLASSES.index(cls)
        if worst is None or rank < worst[0]:
            worst = (rank, row)
    health.xid_row = worst[1] if worst else None


def _physical(health: NodeHealth, obs: NodeObservation, node: Obj, rows: Mapping[str, Mapping[str, Any]]) -> None:
    for lost in obs.lost_gpus:
        card = _card(health, obs, lost.pci, lost.index, "lost")
        card.what.append({"nvidia-smi": "no device handle", "query": "[GPU is lost]", "table": "ERR! readings"}
                         .get(lost.source, lost.source))
        card.evidence.append(f"nvidia-smi: {lost.text.splitlines()[0] if lost.text else lost.source}")
    for error in obs.kernel_errors:
        card = _card(health, obs, error.pci, error.minor if not error.pci else None, "lost")
        card.what.append("kernel: " + ("fell off the bus" if "fallen off" in error.text else "init failed"))
        card.evidence.append(f"kernel {error.time}: {error.text}".strip())
    _xids(health, obs, rows)
    for reading in obs.ecc:
        notes = []
        if (reading.volatile_uncorrected or 0) > 0:
            count = reading.volatile_uncorrected
            notes.append((f"{count} uncorrectable ECC error(s) since the driver loaded", "reset"))
        if reading.remap_failure:
            notes.append(("a row remapping failed", "reset"))
        if reading.remapped_pending:
            notes.append(("remapped rows wait for a GPU reset", "watch"))
        if reading.retired_pending:
            notes.append(("retired pages wait for a GPU reset", "watch"))
        for text, cls in notes:
            card = _card(health, obs, reading.pci, None, cls)
            card.what.append(text)
            card.evidence.append(f"nvidia-smi -q ECC on {reading.pci}: {text}")
    if not obs.gpus or obs.lost_gpus or obs.nvidia_smi_error:
        return
    listed = sorted(g.index for g in obs.gpus if g.index is not None)
    for i in (i for i in range(max(listed) + 1) if i not in listed) if listed else ():
        card = _card(health, obs, "", i, "lost")
        card.what.append(f"index {i} missing from nvidia-smi")
        card.evidence.append(f"nvidia-smi lists indexes {', '.join(map(str, listed))}: {i} is missing")
    for uuid in _unlisted_uuids(obs):
        key = f"uuid:{uuid}"
        health.cards[key] = CardProblem(
            key, f"the card {uuid}", "lost", ["registered by the device plugin, not listed by nvidia-smi"],
            [f"kubelet checkpoint: the device plugin registered {uuid}; nvidia-smi does not list it"],
        )
    expected = _labelled_count(node)
    lost_cards = health.by_class("lost")
    shown = {t.pci for t in obs.table} | {f"index:{i}" for i in listed} if lost_cards else set()
    unlisted = [c for c in lost_cards if c.key not in shown]
    missing = (expected or 0) - len(obs.gpus) - len(unlisted)
    for n in range(max(missing, 0)):
        key = f"missing:{n}"
        health.cards[key] = CardProblem(
            key,
            "a card nvidia-smi no longer lists",
            "lost",
            [f"nvidia-smi lists {len(obs.gpus)} card(s), the node is labelled {COUNT_LABEL}={expected}"],
            [f"nvidia-smi lists {len(obs.gpus)} card(s); label {COUNT_LABEL}={expected}"],
        )


def node_health(facts: Facts, name: str, xids: Mapping[str, Mapping[str, Any]] | None = None) -> NodeHealth:
    """Everything known about the GPUs of ``name`` (needs nodes, node_readings, components).
    ``xids``: ``xid_rows(facts)`` where the caller asks for many nodes (the table read once, not
    once a node: at 500 nodes that was 40% of health.gpus)."""
    return node_health_of(facts, name, facts.node_readings.get(name), xids)


def node_health_of(
    facts: Facts, name: str, reading: object, xids: Mapping[str, Mapping[str, Any]] | None = None
) -> NodeHealth:
    """``node_health`` of ``reading`` (the node's reading, its read error, or None: not read),
    which needs no ``node_readings``: it can be worked out as the node answers."""
    health = NodeHealth(name)
    node = facts.nodes.get(name) or {}
    for resource, (capacity, allocatable) in node_gpu_capacity(node).items():
        if capacity > allocatable:
            health.withdrawn[resource] = (capacity, allocatable)
    health.plugin_pods = [
        p
        for p in facts.components.pods_on(name)
        if "device-plugin" in name_of(p)
    ]
    if isinstance(reading, NodeProbeError):
        health.unread = f"ssh {reading.reason}"
        return health
    if not isinstance(reading, NodeObservation):
        health.unread = "not read"
        return health
    _physical(health, reading, node, xid_rows(facts) if xids is None else xids)
    health.cards_read, health.kernel_source = len(reading.gpus), reading.kernel_log
    health.hardware_clean = (
        not health.cards and bool(reading.gpus) and not reading.nvidia_smi_error and reading.ecc_read
        and bool(reading.kernel_log)
    )
    if not reading.kernel_log:
        health.unread = "kernel log not readable"
    return health


def plugin_running(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and not meta_of(pod).get("deletionTimestamp")
