"""What every audit trail does before its backend writes: one ``append`` for both.

``AppendOnlyLog.append`` checks the event, takes the time (the caller's ``ts``, else the
backend's clock: this host's for the file, the API server's for the objects), turns ``detail``
into plain JSON values and hands the entry to the backend's ``write``, which stores it and gives
it back numbered. So the two trails cannot differ in what they accept or in what an entry says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.state.records import AUDIT_EVENTS, AuditEntry, plain_json, utc


class AppendOnlyLog(ABC):
    """The shared half of ``contracts.AuditLog``; a backend adds ``now``, ``write`` and ``query``."""

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
    ) -> AuditEntry:
        if event not in AUDIT_EVENTS:
            raise ValueError(f"unknown audit event {event!r}")
        return self.write(
            AuditEntry(
                id=0,
                ts=utc(ts) if ts is not None else self.now(),
                event=event,
                action_id=action_id,
                action=action,
                actor=actor,
                cluster=cluster,
                target=target,
                detail=plain_json(detail or {}),
                outcome=outcome,
            )
        )

    @abstractmethod
    def now(self) -> datetime:
        """The trail's clock, for an entry given no time."""

    @abstractmethod
    def write(self, entry: AuditEntry) -> AuditEntry:
        """Store ``entry`` (never changing an earlier one); the entry as stored, with its ``id``."""
