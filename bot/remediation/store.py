"""What a store of pending actions must do, independent of where the records live.

SQLite (``sqlite_store``) is the embedded default. A store on Kubernetes objects (one object per
pending action, optimistic concurrency on ``resourceVersion``) must be able to replace it when
several replicas run, so this interface speaks only of records and state transitions, never of
SQL, files or connections. The one hard promise every implementation keeps: ``claim`` moves a
record from ``pending`` to ``running`` at most once, whoever calls it, from however many threads,
processes or replicas.

This module must never perform I/O; it only holds the record type and the contract.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

State = Literal["pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"]

#: every state a record can be in
STATES: frozenset[str] = frozenset(
    {"pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"}
)
#: states a running record may finish in (``finish``)
FINISH_STATES: frozenset[str] = frozenset({"succeeded", "failed", "refused"})

ClaimStatus = Literal["claimed", "already_taken", "expired", "unknown"]


def utc(ts: datetime) -> datetime:
    """``ts`` in UTC; a naive time is refused because it would compare wrongly across hosts."""
    if ts.tzinfo is None:
        raise ValueError("naive datetime: pending-action times must carry a timezone")
    return ts.astimezone(UTC)


@dataclass(frozen=True)
class PendingAction:
    """One offered remediation, from the offer until its end state.

    The Slack button carries only ``id``; everything else is read back from the store, so a
    forged or edited button value can at most name a record that does not exist.
    """

    #: opaque, unguessable id (``ids.new_action_id``)
    id: str
    #: registered action name, e.g. ``kubelet.restart``
    action: str
    #: action parameters (node, namespace, pod…), already validated names
    params: dict[str, str]
    #: cluster name from settings
    cluster: str
    #: Slack user id, or ``cli:<user>`` for the command line
    requested_by: str
    #: when the offer was made (UTC)
    created_at: datetime
    #: after this instant a click is refused and the record becomes ``expired``
    expires_at: datetime
    #: Slack channel id of the offer message; empty for the CLI
    channel: str = ""
    #: Slack ``ts`` of the offer message, so the result can update it in place
    message_ts: str | None = None
    #: Slack thread of the offer message
    thread_ts: str | None = None
    state: State = "pending"
    #: who clicked the button that claimed it
    approved_by: str | None = None
    finished_at: datetime | None = None
    #: one line for people: what happened
    result_summary: str | None = None
    #: the finding that offered this action (``findings.md`` code)
    finding_code: str | None = None
    #: free for implementations (e.g. a Kubernetes ``resourceVersion``); never shown to people
    version: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"unknown pending-action state {self.state!r}")
        object.__setattr__(self, "created_at", utc(self.created_at))
        object.__setattr__(self, "expires_at", utc(self.expires_at))
        if self.finished_at is not None:
            object.__setattr__(self, "finished_at", utc(self.finished_at))

    @property
    def target(self) -> str:
        """What the action changes, for audit lines and messages: ``node/gpu-1``, ``pod/ns/name``."""
        p = self.params
        if p.get("node"):
            return f"node/{p['node']}"
        if p.get("pod"):
            return f"pod/{p.get('namespace', '')}/{p['pod']}" if p.get("namespace") else f"pod/{p['pod']}"
        for kind in ("deployment", "daemonset", "namespace"):
            if p.get(kind):
                return f"{kind}/{p[kind]}"
        return ""

    def is_expired(self, now: datetime) -> bool:
        return utc(now) >= self.expires_at


@dataclass(frozen=True)
class ClaimResult:
    """The answer of ``PendingStore.claim``.

    ``claimed``: this caller moved the record to ``running`` and alone may run it.
    ``already_taken``: somebody else did (or it ended); ``state`` says where it is now.
    ``expired``: it was still pending but too late; the store moved it to ``expired``.
    ``unknown``: no such id.
    """

    status: ClaimStatus
    action: PendingAction | None = None
    #: the record's state after the call (``None`` when unknown)
    state: str | None = None

    @property
    def claimed(self) -> bool:
        return self.status == "claimed"


class PendingStore(Protocol):
    """Where pending actions live. Every method is safe to call from many threads at once."""

    def create(self, action: PendingAction) -> PendingAction:
        """Store a new ``pending`` record; an existing id is an error (ids are never reused)."""
        ...

    def get(self, action_id: str) -> PendingAction | None: ...

    def claim(self, action_id: str, *, approver: str, now: datetime) -> ClaimResult:
        """Atomically ``pending`` → ``running`` (setting ``approved_by``) if pending and not expired.

        A pending record past ``expires_at`` is moved to ``expired`` in the same step.
        """
        ...

    def finish(
        self, action_id: str, state: str, summary: str, *, now: datetime | None = None
    ) -> PendingAction | None:
        """``running`` → ``state`` (one of ``FINISH_STATES``); ``None`` if the record was not running."""
        ...

    def set_message(
        self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None
    ) -> None:
        """Remember where the offer was posted, once Slack has answered with its ``ts``."""
        ...

    def expire_overdue(self, now: datetime) -> builtins.list[PendingAction]:
        """Move every pending record past its expiry to ``expired``; return those records."""
        ...

    def mark_interrupted_on_start(self, *, now: datetime | None = None) -> builtins.list[PendingAction]:
        """Move every ``running`` record to ``interrupted`` (called once at start-up); return them.

        A record found running at start was cut off by a crash or restart: it is reported, never
        re-run, because its steps may have half happened.
        """
        ...

    def list(self, *, states: Iterable[str] | None = None, limit: int = 100) -> builtins.list[PendingAction]:
        """Newest first, optionally only in ``states``."""
        ...
