"""Each GPU card's state, one classification for the node-status text and its picture.

The text table prints each card's state after its working verdict, and the PNG colours each cell
by it: both call ``node_card_states``, so they cannot disagree. It judges from what the node row
holds (the card's verdict, the pods placed on it, the checkpoint entries of pods that are gone,
the node's readiness and read status), never from a finding about the node as a whole: a node-level
finding is said beside the node, not painted onto cards it may not be about.

- ``free``: idle, held by no pod (and no more of them than the API leaves free);
- ``busy``: computing;
- ``allocated_idle``: a live pod holds it and it does nothing;
- ``leaked``: idle and held by a pod that no longer exists (its kubelet checkpoint entry names the
  card, or holds devices on the node that name no card: qGPU slices), or computing while no pod on
  the node asks for any GPU;
- ``lost``: the node is NotReady, or the card could not be judged (unhealthy, no readings);
- ``unreadable``: the node itself could not be read; its cards come from the API's capacity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from bot.report import CardRow, NodeRow

#: state -> (label, colour); the order is the legend's, the best first
STATES: dict[str, tuple[str, str]] = {
    "free": ("free", "#43a047"),
    "busy": ("busy", "#1e88e5"),
    "allocated_idle": ("allocated, idle", "#fdd835"),
    "leaked": ("leaked", "#fb8c00"),
    "lost": ("lost / unhealthy", "#e53935"),
    "unreadable": ("unreadable", "#9e9e9e"),
}


def _requested(row: NodeRow) -> float:
    return sum(v.get("requested", 0.0) for v in row.logical.values())


def card_state(card: CardRow, row: NodeRow) -> str:
    """The state of one read card of ``row``."""
    if not row.ready or card.verdict not in ("busy", "idle"):
        return "lost"
    if not card.pods and card.verdict == "idle" and (card.gone_holders or row.gone_holders):
        return "leaked"
    if card.verdict == "busy":
        return "leaked" if not card.pods and card.processes and not _requested(row) else "busy"
    return "allocated_idle" if card.pods else "free"


def cards_from_capacity(row: NodeRow) -> int:
    """Whole cards the API says the node has: nvidia.com/gpu, or qGPU core / 100."""
    for resource, numbers in row.logical.items():
        if resource == "nvidia.com/gpu":
            return int(numbers.get("capacity", 0))
        if resource.endswith("/qgpu-core"):
            return math.ceil(numbers.get("capacity", 0) / 100)
    return 0


def _held_unplaced(row: NodeRow, states: Sequence[str]) -> int:
    """Cards shown free that the API counts as requested: whole cards (``nvidia.com/gpu``, one
    per card read) requested by pods that no placement ties to a card (the checkpoint could not
    be read, or does not name them). Never more than the free cards."""
    numbers = row.logical.get("nvidia.com/gpu")
    if not numbers or int(numbers.get("capacity", 0)) != len(row.gpus):
        return 0  # shared (time-slicing replicas) or MIG: the counts are not cards
    free_slots = max(int(numbers.get("allocatable", 0) - numbers.get("requested", 0)), 0)
    return max(states.count("free") - free_slots, 0)


def node_card_states(row: NodeRow) -> list[str]:
    """The state of each card of ``row``, in card order (from capacity when it was not read).

    A card is never shown free beyond what the API leaves free: with eight cards requested by a
    Terminating pod whose cards nothing names, eight idle cards are "allocated, idle", not "free"
    beside "requested 8/8". Which of the idle cards the pod holds is not known, so the last free
    ones are marked; the count is what is true."""
    if row.ssh != "ok":
        return ["unreadable"] * max(cards_from_capacity(row), 1)
    states = [card_state(card, row) for card in row.gpus]
    if not states and not row.ready:
        return ["lost"] * max(cards_from_capacity(row), 1)
    held = _held_unplaced(row, states)
    for i in reversed(range(len(states))):
        if held and states[i] == "free":
            states[i], held = "allocated_idle", held - 1
    return states


def totals(states: Iterable[Sequence[str]]) -> dict[str, int]:
    """Cards per state over all nodes (every state present, zero or not)."""
    counts = dict.fromkeys(STATES, 0)
    for node in states:
        for state in node:
            counts[state] += 1
    return counts


def label(state: str) -> str:
    return STATES[state][0]
