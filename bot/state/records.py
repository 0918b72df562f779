"""The records gpubot's state keeps, whatever the backend: plain values, no I/O.

    PendingAction, ClaimResult   an offered remediation from offer to end state, a claim's answer
    AuditEntry                   one line of the append-only audit trail
    NodeClaim, Adoption          answers of the per-node action lock on the cluster
    Problem, OpenProblem         a problem the watch posts about, and the post that shows it

They live below every feature (remediation, the watch, Slack) so the stores (``bot.state``) need
nothing from those features and the features share one definition. The promises a store keeps
about them are ``bot.state.contracts``.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from bot.state.timestamps import format_ts

State = Literal["pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"]

#: every state a record can be in
STATES: frozenset[str] = frozenset(
    {"pending", "running", "succeeded", "failed", "refused", "expired", "interrupted"}
)
#: states a running record may finish in (``finish``); ``interrupted``: cut off and restored by recovery
FINISH_STATES: frozenset[str] = frozenset({"succeeded", "failed", "refused", "interrupted"})

ClaimStatus = Literal["claimed", "already_taken", "expired", "busy", "unknown"]


def plain_json(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as plain JSON values (anything else as its ``str``): what every backend stores."""
    loaded: dict[str, Any] = json.loads(json.dumps(dict(value), sort_keys=True, default=str, ensure_ascii=False))
    return loaded


def process_owner() -> str:
    """This process's name on the records it runs and the Leases it holds: host, pid and a random
    suffix (never reused)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"


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


NodeClaimStatus = Literal["acquired", "busy", "abandoned"]
#: how a stale record's node lock stands: "ours" (the lock is now the caller's: restore from the
#: record), "elsewhere" (another process already restored the node, or acts on it now: do not
#: touch it), "live" (its holder still renews the lock: leave it alone)
Adoption = Literal["ours", "elsewhere", "live"]


@dataclass(frozen=True)
class NodeClaim:
    """The answer of ``NodeGuard.acquire``.

    ``acquired``: the caller holds the node. ``busy``: ``holder`` (a live run) does; its lock runs
    out in ``expires_in_s`` unless renewed. ``abandoned``: ``holder`` stopped renewing; the caller
    now holds the lock *for restoring it* (``holder.progress`` says what it changed) and must
    ``release(..., restored=holder.id)`` before it acquires the node for its own run.
    """

    status: NodeClaimStatus
    holder: PendingAction | None = None
    expires_in_s: float = 0.0


@dataclass(frozen=True)
class Problem:
    """One finding the watch posts about."""

    fingerprint: str
    cluster: str
    code: str
    severity: str
    #: ``node/NAME`` or, for a finding about no single node, its title with numbers masked
    subject: str
    title: str
    evidence: tuple[str, ...]

    @property
    def digest(self) -> str:
        """Changes when what the post shows changes (title or evidence)."""
        text = "\n".join((self.title, *self.evidence))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


#: the ``message_ts`` of a problem whose post is decided but not yet confirmed by Slack
POSTING = ""


@dataclass(frozen=True)
class OpenProblem:
    """A problem as the store remembers it, with the message that shows it."""

    problem: Problem
    channel: str
    message_ts: str
    opened_at: datetime
    updated_at: datetime
    digest: str
    resolved_at: datetime | None = None

    @property
    def posting(self) -> bool:
        """Its post was decided but its ts never recorded: the process may have stopped mid-post."""
        return not self.message_ts
