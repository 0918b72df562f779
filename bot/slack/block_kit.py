"""Block Kit primitives every Slack message builder shares: the block shapes, Slack's size limits
applied to them, and the rendered message. Builders (``blocks``, ``pending_blocks`` …) import
these; this module imports no builder, so builders may call each other without a cycle.

Text given to ``section`` and ``context`` is mrkdwn its caller has already escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.slack import limits as L

Block = dict[str, Any]
MARKERS: dict[str, str] = {"critical": "🔴", "warning": "🟠", "info": "🔵"}

#: total serialised size of the blocks; beyond it the rest goes to the attached file
MAX_MESSAGE_JSON = 24000


@dataclass
class Rendered:
    """A message ready for chat.postMessage, and whether anything was left out of it."""

    blocks: list[Block]
    text: str
    #: findings (or table/text chunks) that did not fit; > 0 means attach the full report
    omitted: int = 0

    @property
    def truncated(self) -> bool:
        return self.omitted > 0


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": L.clip(text, L.MAX_SECTION_TEXT)}


def plain(text: str, limit: int) -> dict[str, Any]:
    """A plain_text object cut to ``limit`` (Slack rejects an empty one, so never empty)."""
    return {"type": "plain_text", "text": L.clip(text, limit) or " ", "emoji": True}


def section(text: str, *, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": _mrkdwn(text)}
    if block_id:
        block["block_id"] = L.clip(block_id, L.MAX_ID, marker="")
    return block


def context(texts: list[str]) -> Block:
    return {"type": "context", "elements": [_mrkdwn(t) for t in texts[: L.MAX_CONTEXT_ELEMENTS]]}


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, L.MAX_HEADER)}


def severity_marker(severity: str) -> str:
    return MARKERS.get(severity, "⚪")
