"""How ``gpubot audit`` reads and shows the trail (``--since``, the table, JSON lines).

The entry type is ``bot.state.records.AuditEntry``; the interface a log keeps is
``bot.state.contracts.AuditLog``.

Every offer, approval request, approval, denial, refusal (with its reason), start, step, result,
interruption and expiry is one appended entry. The trail is append-only: no code path updates or deletes an entry (the
SQLite schema enforces it with triggers), so it can be trusted after the fact.

This module holds no storage. It must never write secrets or raw user text into ``detail``
beyond what the caller passes, and never print a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.errors import UsageError
from bot.state.records import AuditEntry

_DURATION_RE = re.compile(r"(\d{1,6})([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: datetime) -> datetime:
    """``30m``, ``2h``, ``7d`` (before ``now``) or an ISO time; a time without zone is UTC."""
    value = text.strip()
    m = _DURATION_RE.fullmatch(value)
    if m:
        return now.astimezone(UTC) - timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2)])
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise UsageError(
            "--since: expected a duration like 30m, 2h, 7d or a time like 2026-11-30T00:00:00Z, "
            f"got {shown!r}"
        ) from None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


_COLUMNS = ("time", "event", "action", "actor", "cluster", "target", "outcome", "id", "detail")


def _short_ts(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _detail_text(detail: Mapping[str, Any]) -> str:
    # The reason is what a reader looks for first; the rest follows as key=value.
    parts = []
    if "reason" in detail:
        parts.append(str(detail["reason"]))
    parts.extend(f"{k}={v}" for k, v in sorted(detail.items()) if k != "reason")
    return "; ".join(parts).replace("\n", " ")


def format_audit(entries: Sequence[AuditEntry], as_json: bool) -> str:
    """Human text (an aligned table) or JSON lines, one entry per line, oldest first."""
    if as_json:
        return "\n".join(json.dumps(e.to_dict(), sort_keys=True, ensure_ascii=False) for e in entries)
    if not entries:
        return "no audit entries"
    rows = [
        (
            _short_ts(e.ts),
            e.event,
            e.action or "-",
            e.actor or "-",
            e.cluster or "-",
            e.target or "-",
            e.outcome or "-",
            e.action_id[:8] or "-",
            _detail_text(e.detail),
        )
        for e in entries
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_COLUMNS[:-1])]

    def line(cells: Sequence[str]) -> str:
        head = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=True))
        return (head + "  " + cells[-1]).rstrip()

    return "\n".join([line(_COLUMNS), *(line(r) for r in rows)])
