"""What every store of gpubot's state promises, whatever holds it: the SQLite file or the
Kubernetes API. Typing Protocols only; no I/O, no backend.

    PendingStore   offered actions from offer to end state (claim at most once, one per node)
    AuditLog       the append-only trail of every offer, approval, refusal, step and result
    SeenRequests   Slack requests already handled (retry de-duplication shared by every replica)
    ProblemStore   the watch's memory: open problems, their posts, snoozes, the hourly summary
    AlertGroups    which message each Alertmanager group was posted as
    NodeGuard      the per-node action lock on the node's own cluster (a Lease), for every actor
    Leader         who runs the singletons (sweeps, the watch, posting) among the replicas

The hard promises of a ``PendingStore``, whoever calls it, from however many threads, processes
or replicas:

- ``claim`` moves a record from ``pending`` to ``running`` at most once;
- at most one record per node (``lock_key``) is ``running`` at a time: a claim on a busy node is
  refused and names the action that holds it;
- time is the store's: expiry and heartbeats are decided by the store's clock (``now``), never
  by the caller's, so a replica with a slow clock cannot run an expired offer;
- a running record belongs to one owner (a process), which renews its ``heartbeat_at``; only a
  record whose heartbeat is older than the lease is taken over by another process.

A node action also takes its node's lock on the *cluster* (``NodeGuard``; ``kube_locks``) whatever
the state backend, so two terminals with different state files, or a terminal beside the bot,
cannot act on one node at once. The lock carries a duration and is renewed while the run lasts;
it also carries the run's record and, before every step, what the run has changed so far, so
whoever touches the node next after its holder died (``abandoned``) can restore the node from the
lock alone, even if the dead run's state file is on another machine.

Every store method may raise ``StateStoreError`` when its state cannot be read or written.
``tests/state/test_store_contracts.py`` runs every contract against both backends.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from bot.state.records import Adoption, AuditEntry, ClaimResult, NodeClaim, OpenProblem, PendingAction, Problem

#: a coroutine a leader runs (a sweep, a watch)
CoroFactory = Callable[[], Awaitable[object]]


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


class SeenRequests(Protocol):
    """Slack requests already handled by any replica (``bot.slack.dedupe.SharedKeys``); may block."""

    def first(self, key: str) -> bool:
        """Record ``key``; True when no replica saw it within the TTL (handle it), else False."""
        ...

    def close(self) -> None:
        """Release what it holds (at shutdown)."""
        ...


class ProblemStore(Protocol):
    """The watch's memory: one row per open problem and channel (and its post), snoozes, and the
    channel's rate-limit summary. Times are the watcher's; only the leader's watcher writes."""

    def open_problems(self, cluster: str, channel: str) -> dict[str, OpenProblem]:
        """Fingerprint -> the open problem posted to ``channel`` for ``cluster``."""
        ...

    def history(self, fingerprint: str) -> builtins.list[OpenProblem]:
        """Every row of one problem, open and resolved, oldest first."""
        ...

    def opened(self, problem: Problem, *, channel: str, message_ts: str, at: datetime) -> None:
        """A new open problem; a second open row for one problem and channel is refused."""
        ...

    def intend(self, problem: Problem, *, channel: str, at: datetime) -> None:
        """Record the open problem before its message is posted (the ts follows in ``posted``)."""
        ...

    def posted(self, fingerprint: str, *, channel: str, message_ts: str) -> None:
        """The message an intent was posted as."""
        ...

    def changed(self, problem: Problem, *, channel: str, at: datetime) -> None: ...

    def resolved(self, fingerprint: str, *, channel: str, at: datetime) -> None:
        """The open row becomes history; the problem may open again later as a fresh row."""
        ...

    def posts_since(self, channel: str, since: datetime) -> int:
        """How many problem messages were posted to ``channel`` since ``since`` (any cluster)."""
        ...

    def snooze(self, fingerprint: str, *, channel: str, until: datetime | None, by: str, at: datetime) -> None:
        """Silence the problem in ``channel`` until ``until`` (``None``: until it resolves)."""
        ...

    def snoozed(self, fingerprint: str, *, channel: str, now: datetime) -> bool: ...

    def end_snoozes_until_resolved(self, fingerprint: str, *, channel: str) -> None: ...

    def summary(self, channel: str) -> tuple[str, datetime, str] | None:
        """The channel's rate-limit summary: (message ts, window start, digest of its content)."""
        ...

    def summarised(self, channel: str, *, message_ts: str, window_start: datetime, digest: str) -> None: ...


class AlertGroups(Protocol):
    """Which message each (group key, channel) was posted as, and the digest it shows."""

    def known(self, group_key: str, channel: str) -> tuple[str, str] | None: ...

    def remember(self, group_key: str, channel: str, message_ts: str, digest: str) -> None: ...


class NodeGuard(Protocol):
    """The per-node lock on the cluster; blocking calls (the flow runs them in a thread).

    ``holder`` is one run's identity (unique per attempt, so two clicks in one process never
    share it). Every method may raise ``StateStoreError``: no lock, no action.
    """

    def acquire(self, record: PendingAction, holder: str) -> NodeClaim: ...

    def renewed(self, record: PendingAction) -> bool:
        """Whether ``record``'s node lock names it and is still renewed (its process lives)."""
        ...

    def adopt(self, record: PendingAction, holder: str) -> Adoption:
        """For a record recovery took over from the store: may its node be restored from it?"""
        ...

    def renew(self, record: PendingAction, holder: str, progress: Mapping[str, Any] | None = None) -> None:
        """Renew the lock (and store ``progress`` on it); ``StateStoreError`` when it is not ours any more."""
        ...

    def release(self, record: PendingAction, holder: str, *, restored: str = "") -> None:
        """Free the node (never raises); ``restored``: the id of an abandoned run just restored."""
        ...

    def abandoned(self) -> list[PendingAction]:
        """Runs whose holder stopped renewing their node's lock, on every cluster, whatever state
        recorded them: what a sweep restores without waiting for someone to touch the node."""
        ...


class Leader(Protocol):
    """What the server asks: am I the leader, and run this only while I am."""

    def is_leader(self) -> bool: ...

    async def run_while_leader(self, coro_factory: CoroFactory) -> None: ...

    async def run(self, stop: asyncio.Event) -> None:
        """Seek and keep leadership until ``stop`` is set, then give it up."""
        ...
