"""What a store of pending actions must do, independent of where the records live.

SQLite (``sqlite_store``) is the embedded default. A store on Kubernetes objects (one object per
pending action, optimistic concurrency on ``resourceVersion``, a coordination.k8s.io Lease per
node) must be able to replace it when several replicas run, so this interface speaks only of
records and state transitions, never of SQL, files or connections. The hard promises every
implementation keeps, whoever calls it, from however many threads, processes or replicas:

- ``claim`` moves a record from ``pending`` to ``running`` at most once;
- at most one record per node (``lock_key``) is ``running`` at a time: a claim on a busy node is
  refused and names the action that holds it;
- time is the store's: expiry and heartbeats are decided by the store's clock (``now``), never
  by the caller's, so a replica with a slow clock cannot run an expired offer;
- a running record belongs to one owner (a process), which renews its ``heartbeat_at``; only a
  record whose heartbeat is older than the lease is taken over by another process.

This module must never perform I/O; it only holds the record type and the contract.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

State = Literal["pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"]

#: every state a record can be in
STATES: frozenset[str] = frozenset(
    {"pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"}
)
#: states a running record may finish in (``finish``); ``interrupted``: cut off and restored by recovery
FINISH_STATES: frozenset[str] = frozenset({"succeeded", "failed", "refused", "interrupted"})

ClaimStatus = Literal["claimed", "already_taken", "expired", "busy", "unknown"]


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
    #: the process running it (set by ``claim``; an id, never shown to people)
    owner: str | None = None
    #: when the owner last said it is still running it (store clock)
    heartbeat_at: datetime | None = None
    #: the action's own state machine, written before each step (what it changed so far)
    progress: dict[str, Any] = field(default_factory=dict, compare=False)
    #: free for implementations (e.g. a Kubernetes ``resourceVersion``); never shown to people
    version: str = field(default="", compare=False)
    #: the blocks (JSON) of the message carrying this offer's status line, as a process last
    #: wrote them: whoever ends the run (a survivor restoring it) edits that line from them
    message_blocks: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"unknown pending-action state {self.state!r}")
        object.__setattr__(self, "created_at", utc(self.created_at))
        object.__setattr__(self, "expires_at", utc(self.expires_at))
        if self.finished_at is not None:
            object.__setattr__(self, "finished_at", utc(self.finished_at))
        if self.heartbeat_at is not None:
            object.__setattr__(self, "heartbeat_at", utc(self.heartbeat_at))

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

    @property
    def lock_key(self) -> str:
        """What only one running action may hold at a time: ``cluster/node/NAME``; empty for
        actions that touch no node (their own claim is their only lock)."""
        return f"{self.cluster}/{self.target}" if self.target.startswith("node/") else ""

    def is_expired(self, now: datetime) -> bool:
        return utc(now) >= self.expires_at


@dataclass(frozen=True)
class ClaimResult:
    """The answer of ``PendingStore.claim``.

    ``claimed``: this caller moved the record to ``running`` and alone may run it.
    ``already_taken``: somebody else did (or it ended); ``state`` says where it is now.
    ``expired``: it was still pending but too late; the store moved it to ``expired``.
    ``busy``: another action runs on the same node (``holder``); the record stays pending.
    ``unknown``: no such id.
    """

    status: ClaimStatus
    action: PendingAction | None = None
    #: the record's state after the call (``None`` when unknown)
    state: str | None = None
    #: for ``busy``: the running record that holds the node
    holder: PendingAction | None = None

    @property
    def claimed(self) -> bool:
        return self.status == "claimed"


class PendingStore(Protocol):
    """Where pending actions live. Every method is safe to call from many threads at once.

    Every method may raise ``StateStoreError`` when the store cannot be read or written.
    """

    def now(self) -> datetime:
        """The store's clock: what expiry, heartbeats and offer times are measured against."""
        ...

    def create(self, action: PendingAction) -> PendingAction:
        """Store a new ``pending`` record; an existing id is an error (ids are never reused)."""
        ...

    def get(self, action_id: str) -> PendingAction | None: ...

    def claim(self, action_id: str, *, approver: str, owner: str = "") -> ClaimResult:
        """Atomically ``pending`` → ``running`` (setting ``approved_by``, ``owner`` and a first
        heartbeat) if pending, not expired by the store's clock and its node is free.

        A pending record past ``expires_at`` is moved to ``expired`` in the same step. ``owner``
        empty: nobody renews it (a record that any recovery may take over at once).
        """
        ...

    def heartbeat(self, action_id: str, owner: str) -> bool:
        """Renew ``owner``'s claim on a running record; False if it is no longer running or ours."""
        ...

    def save_progress(self, action_id: str, owner: str, progress: Mapping[str, Any]) -> None:
        """Write the action's state machine (renewing the heartbeat) before a step runs.

        Raises ``StateStoreError`` if it cannot be written or the record is no longer ``owner``'s:
        then the step must not run.
        """
        ...

    def finish(self, action_id: str, state: str, summary: str) -> PendingAction | None:
        """``running`` → ``state`` (one of ``FINISH_STATES``), freeing its node; ``None`` if the
        record was not running."""
        ...

    def set_message(
        self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None
    ) -> None:
        """Remember where the offer was posted, once Slack has answered with its ``ts``."""
        ...

    def set_blocks(self, action_id: str, blocks: str) -> None:
        """Remember the blocks (JSON) of the message that shows this offer's status line."""
        ...

    def expire_overdue(self) -> builtins.list[PendingAction]:
        """Move every pending record past its expiry (store clock) to ``expired``; return those."""
        ...

    def take_over_stale(
        self, owner: str, *, lease_s: float, skip: Collection[str] = ()
    ) -> builtins.list[PendingAction]:
        """Make ``owner`` the owner of every running record whose heartbeat is older than
        ``lease_s`` (or that nobody renews), but those in ``skip``, and return them for recovery.

        A record whose owner still renews it is left alone: another live process is running it
        (``skip``: the ones whose node lock on the cluster is still renewed, whatever this store says).
        """
        ...

    def list(self, *, states: Iterable[str] | None = None, limit: int = 100) -> builtins.list[PendingAction]:
        """Newest first, optionally only in ``states``."""
        ...
