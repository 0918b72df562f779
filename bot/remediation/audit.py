"""The audit trail: its entry type, the interface a log keeps, and how ``gpubot audit`` shows it.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from bot.errors import UsageError

AuditEvent = Literal[
    "offer", "request", "approve", "deny", "refuse", "start", "step", "result", "interrupted", "expire"
]
AUDIT_EVENTS: frozenset[str] = frozenset(
    {"offer", "request", "approve", "deny", "refuse", "start", "step", "result", "interrupted", "expire"}
)


@dataclass(frozen=True)
class AuditEntry:
    """One line of the trail. ``id`` grows with every append; ``ts`` is UTC."""

    id: int
    ts: datetime
    event: str
    action_id: str = ""
    action: str = ""
    #: who did it: a Slack user id, ``cli:<user>`` or ``gpubot`` for the bot itself
    actor: str = ""
    cluster: str = ""
    #: what the action changes, e.g. ``node/gpu-1``
    target: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)
    #: offered, approved, refused, started, ok, failed, expired, interrupted, …
    outcome: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": format_ts(self.ts),
            "event": self.event,
            "action_id": self.action_id,
            "action": self.action,
            "actor": self.actor,
            "cluster": self.cluster,
            "target": self.target,
            "outcome": self.outcome,
            "detail": dict(self.detail),
        }


class AuditLog(Protocol):
    """An append-only trail; safe to call from many threads at once."""

    def append(
        self,
        event: str,
        *,
        action_id: str = "",
        action: str = "",
        actor: str = "",
        cluster: str = "",
        target: str = "",
        detail: Mapping[str, Any] | None = None,
        outcome: str = "",
        ts: datetime | None = None,
    ) -> AuditEntry: ...

    def query(
        self, since: datetime | None = None, limit: int = 1000, *, action_id: str | None = None
    ) -> list[AuditEntry]:
        """The newest ``limit`` entries at or after ``since``, oldest first."""
        ...


def format_ts(ts: datetime) -> str:
    """``2026-11-30T10:00:00.123456Z``: fixed width, so text order is time order."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


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
