"""node-status as a picture: one cell per card, grouped by node, coloured by state.

Over a few dozen nodes a table stops being readable; a grid of coloured cells shows at a glance
where the free cards are and which nodes hold leaked or lost ones. Each node is a row of cells
(its cards), nodes are laid out in columns, and a legend gives every state with its count and the
cluster totals. The states:

- ``free``: idle on nvidia-smi and held by no pod;
- ``busy``: computing (the "really working" verdict);
- ``allocated, idle``: a pod holds it, or the node carries a leak / zombie-checkpoint finding,
  yet the card does nothing (allocated-but-idle, the usual leak);
- ``lost``: the node is NotReady or the card could not be judged (unhealthy);
- ``unreachable``: the node itself could not be read (SSH), so its cards are drawn from the
  capacity the API reports.

Rendered with matplotlib (the optional ``png`` extra, imported on first use) as one image array:
the cost does not grow with a plotting call per cell, so 1,000 nodes stay well under a second.
Pure function of the report; it never reads the cluster.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

from bot.errors import UsageError
from bot.report import Finding, NodeRow, Report

#: state -> (label, colour); the order is the legend's
STATES: dict[str, tuple[str, str]] = {
    "free": ("free", "#4caf50"),
    "busy": ("busy", "#1e88e5"),
    "idle_allocated": ("allocated, idle (leaked?)", "#fb8c00"),
    "lost": ("lost / unhealthy", "#e53935"),
    "unreachable": ("node unreachable", "#757575"),
}
#: findings that make a node's idle cards "allocated, idle" rather than free
LEAK_CODES = frozenset({"CHECKPOINT_ZOMBIE", "LEAK_LOGICAL_NOT_PHYSICAL", "LEAK_PHYSICAL_NOT_LOGICAL"})
#: node-status attaches the picture from this many GPU nodes on
PICTURE_MIN_NODES = 20
#: nodes per column of the grid
NODES_PER_COLUMN = 50
#: nodes are named beside their row up to this many; beyond, each column's first node above it
NAME_EVERY_NODE = 120
#: blank cells between columns when every node is named (room for the names)
NAME_GAP = 8

_INSTALL_HINT = "the node-status picture needs the optional 'png' extra: pip install 'gpubot[png]'"


def card_states(row: NodeRow, findings: Iterable[Finding] = ()) -> list[str]:
    """The state of each card of ``row``, in card order (from capacity when it was not read)."""
    if row.ssh != "ok":
        return ["unreachable"] * max(_cards_from_capacity(row), 1)
    leaked = any(f.code in LEAK_CODES and f.subject == f"node/{row.node}" for f in findings)
    states = []
    for card in row.gpus:
        if not row.ready or card.verdict == "unknown":
            states.append("lost")
        elif card.verdict == "busy":
            states.append("busy")
        elif card.pods or leaked:
            states.append("idle_allocated")
        else:
            states.append("free")
    return states or (["lost"] * max(_cards_from_capacity(row), 1) if not row.ready else [])


def _cards_from_capacity(row: NodeRow) -> int:
    """Whole cards the API says the node has: nvidia.com/gpu, or qGPU core / 100."""
    for resource, numbers in row.logical.items():
        if resource == "nvidia.com/gpu":
            return int(numbers.get("capacity", 0))
        if resource.endswith("/qgpu-core"):
            return math.ceil(numbers.get("capacity", 0) / 100)
    return 0


def totals(states: Sequence[Sequence[str]]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for node in states:
        for state in node:
            counts[state] += 1
    return counts


def render_node_picture(report: Report, *, dpi: int = 100) -> bytes:
    """The PNG of ``report.nodes``; raises ``UsageError`` without matplotlib or without nodes."""
    if not report.nodes:
        raise UsageError("no GPU nodes to draw")
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import numpy as np
        from matplotlib import pyplot as plt
        from matplotlib.colors import ListedColormap
        from matplotlib.patches import Patch
    except ImportError:
        raise UsageError(_INSTALL_HINT) from None

    states = [card_states(row, report.findings) for row in report.nodes]
    index = {state: i for i, state in enumerate(STATES)}
    widest = max((len(s) for s in states), default=1) or 1
    n = len(report.nodes)
    columns = math.ceil(n / NODES_PER_COLUMN)
    rows = min(n, NODES_PER_COLUMN)
    named = n <= NAME_EVERY_NODE
    # blank cells between columns of nodes: room for the next column's names when they are shown
    stride = widest + (NAME_GAP if named and columns > 1 else 1)
    grid = np.full((rows, columns * stride - 1), np.nan)
    for i, node_states in enumerate(states):
        r, c = i % NODES_PER_COLUMN, (i // NODES_PER_COLUMN) * stride
        for k, state in enumerate(node_states):
            grid[r, c + k] = index[state]

    width = min(3.0 + columns * stride * 0.18, 40.0)
    height = min(1.6 + rows * 0.16, 14.0)
    fig, ax = plt.subplots(figsize=(width, height), dpi=dpi)
    try:
        cmap = ListedColormap([colour for _, colour in STATES.values()]).with_extremes(bad="white")
        ax.imshow(
            np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(STATES) - 0.5,
            interpolation="nearest", aspect="auto",
        )
        _label_nodes(ax, report.nodes, stride, named)
        ax.set_xticks([])
        for side in ax.spines.values():
            side.set_visible(False)
        counts = totals(states)
        cards = sum(counts.values())
        ax.set_title(
            f"{report.cluster or 'cluster'}: {n} GPU nodes, {cards} cards, "
            f"{counts['free']} free, {counts['busy']} busy",
            fontsize=10, loc="left", pad=6 if named else 34,  # above the rotated column names
        )
        handles = [
            Patch(color=colour, label=f"{label}: {counts[state]}") for state, (label, colour) in STATES.items()
        ]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()
    finally:
        plt.close(fig)


def _label_nodes(ax: Any, nodes: Sequence[NodeRow], stride: int, named: bool) -> None:
    """Node names beside their rows while they are few; else each column's first node above it."""
    ax.set_yticks([])
    for i, row in enumerate(nodes):
        r, col = i % NODES_PER_COLUMN, i // NODES_PER_COLUMN
        if named:
            ax.text(col * stride - 0.6, r, row.node, ha="right", va="center", fontsize=7)
        elif r == 0:
            ax.text(col * stride, -0.9, row.node, ha="left", va="bottom", fontsize=6, rotation=45)
