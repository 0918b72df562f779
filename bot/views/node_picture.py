"""node-status as a picture: a fleet card map, one bordered cell per card, read at a glance.

Each node is a row: its name, then one cell per card with the card's index, coloured by the
card's state (``bot.views.card_state``: the same classification the text table prints, so the two can
not disagree). Nodes run down columns sized so the image stays about 16:10 from 10 to 1,000+
nodes; cells shrink with the fleet (the index is drawn while it fits). On top, a summary line
(nodes, cards, how many free and busy) and the legend with every state's count. A node that is
NotReady, unreadable or carries a critical or warning finding has its name in red.

Drawn with Pillow (the optional ``png`` extra; matplotlib, which brings it, also lends its DejaVu
font): a rectangle and a short text per cell, no plotting call (1,000 nodes, 6,000 cards: 2.2 s on
a busy 2-core machine). Pure function of the report; it never reads the cluster.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import UsageError
from bot.report import Finding, NodeRow, Report
from bot.views.card_state import STATES, node_card_states, totals

#: node-status attaches the picture from this many GPU nodes on
PICTURE_MIN_NODES = 20
#: the image's aimed-at width over height
ASPECT = 1.6
#: (most nodes, cell px, font px, index drawn) per fleet size
TIERS: tuple[tuple[int, int, int, bool], ...] = ((40, 30, 13, True), (250, 20, 10, True), (10**9, 12, 9, False))
#: longest node name drawn in full (longer ones keep their end: it is what tells nodes apart)
NAME_CHARS = 24
BORDER = "#37474f"
BACKGROUND = "#ffffff"
TEXT = "#212121"
ALERT = "#c62828"
MARGIN = 12

_INSTALL_HINT = "the node-status picture needs the optional 'png' extra: pip install 'gpubot[png]'"


@dataclass(frozen=True)
class Layout:
    """The picture's measures, worked out once from the number of nodes, their names and the widest
    row, so every row and label lines up."""

    cell: int
    font: int
    indices: bool
    label_w: int
    columns: int
    rows: int
    widest: int

    @property
    def row_h(self) -> int:
        return self.cell + 3

    @property
    def column_w(self) -> int:
        return self.label_w + self.widest * self.cell + 2 * MARGIN


def layout(nodes: int, widest: int, name_chars: int) -> Layout:
    """Cell size by fleet size, and how many columns keep the picture near ``ASPECT``."""
    cell, font, indices = next((c, f, i) for most, c, f, i in TIERS if nodes <= most)
    label_w = int(min(name_chars, NAME_CHARS) * font * 0.62) + 8
    probe = Layout(cell, font, indices, label_w, 1, nodes, max(widest, 1))
    columns = max(1, round(math.sqrt(nodes * probe.row_h * ASPECT / probe.column_w)))
    columns = min(columns, nodes)
    return Layout(cell, font, indices, label_w, columns, math.ceil(nodes / columns), max(widest, 1))


def _font(size: int) -> Any:
    from PIL import ImageFont

    try:
        from matplotlib import font_manager

        return ImageFont.truetype(font_manager.findfont("DejaVu Sans"), size)
    except (ImportError, OSError, ValueError):
        return ImageFont.load_default(size=size)


def _troubled(row: NodeRow, findings: Sequence[Finding]) -> bool:
    if not row.ready or row.ssh != "ok":
        return True
    return any(f.subject == f"node/{row.node}" and f.severity in ("critical", "warning") for f in findings)


def summary_line(report: Report, counts: dict[str, int]) -> str:
    """``sim: 100 GPU nodes, 600 cards: 16 free, 560 busy, 24 leaked`` (states with no card left out
    beyond free and busy)."""
    cards = sum(counts.values())
    parts = [f"{counts[s]} {STATES[s][0]}" for s in STATES if counts[s] or s in ("free", "busy")]
    return f"{report.cluster or 'cluster'}: {len(report.nodes)} GPU nodes, {cards} cards: " + ", ".join(parts)


def picture_states(report: Report) -> list[list[str]]:
    """Each node's card states as drawn: the text table's classification (``bot.views.card_state``)."""
    return [node_card_states(row) for row in report.nodes]


def _ink(colour: str) -> str:
    """Black or white text, whichever reads on ``colour``."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def render_node_picture(report: Report) -> bytes:
    """The PNG of ``report.nodes``; raises ``UsageError`` without Pillow or without nodes."""
    if not report.nodes:
        raise UsageError("no GPU nodes to draw")
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        raise UsageError(_INSTALL_HINT) from None
    states = picture_states(report)
    counts = totals(states)
    names = [row.node if len(row.node) <= NAME_CHARS else "…" + row.node[-(NAME_CHARS - 1):] for row in report.nodes]
    lay = layout(len(report.nodes), max(len(s) for s in states), max(len(n) for n in names))
    title_font, legend_font, font = _font(16), _font(12), _font(lay.font)
    legend_items = [(colour, f"{label}: {counts[state]}") for state, (label, colour) in STATES.items()]
    legend_w = sum(int(len(text) * 12 * 0.62) + 34 for _, text in legend_items)
    head = 64
    width = max(lay.columns * lay.column_w + MARGIN, legend_w + 2 * MARGIN, 520)
    height = head + lay.rows * lay.row_h + 2 * MARGIN
    img = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    draw.text((MARGIN, 8), summary_line(report, counts), fill=TEXT, font=title_font)
    x = MARGIN
    for colour, text in legend_items:
        draw.rectangle((x, 38, x + 14, 52), fill=colour, outline=BORDER)
        draw.text((x + 20, 38), text, fill=TEXT, font=legend_font)
        x += int(len(text) * 12 * 0.62) + 34
    for i, (row, name, node_states) in enumerate(zip(report.nodes, names, states, strict=True)):
        col, r = divmod(i, lay.rows)
        x0, y0 = MARGIN + col * lay.column_w, head + MARGIN + r * lay.row_h
        draw.text((x0 + lay.label_w - 6, y0 + lay.cell // 2), name, anchor="rm", font=font,
                  fill=ALERT if _troubled(row, report.findings) else TEXT)
        for k, state in enumerate(node_states):
            colour = STATES[state][1]
            cx = x0 + lay.label_w + k * lay.cell
            draw.rectangle((cx, y0, cx + lay.cell - 2, y0 + lay.cell - 2), fill=colour, outline=BORDER)
            if lay.indices:
                index = row.gpus[k].index if k < len(row.gpus) and row.gpus[k].index is not None else k
                draw.text((cx + (lay.cell - 1) // 2, y0 + (lay.cell - 1) // 2), str(index), anchor="mm",
                          font=font, fill=_ink(colour))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()
