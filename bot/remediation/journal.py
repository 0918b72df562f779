"""A running action's paper trail: its state before each step, each step's real outcome, its heartbeat.

``RunJournal`` is what an action's steps write through (``ActionContext.journal``): ``before``
stores the action's state machine on the record and appends a ``step … starting`` audit entry,
and raises if either cannot be written, so a step whose record cannot be kept never runs;
``after`` appends the step's real outcome (ok, failed, skipped). ``heartbeat`` renews the
process's claim on the record while it runs, so another replica knows it is alive and leaves it
alone.

This module never decides what an action does; it only records it. It must never import an
action or a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from bot.errors import StateStoreError
from bot.state.contracts import AuditLog, NodeGuard, PendingStore
from bot.state.records import PendingAction

log = logging.getLogger(__name__)

#: the actor name the bot itself uses in the audit trail
BOT_ACTOR = "gpubot"


def audit_entry(
    audit: AuditLog, event: str, record: PendingAction, actor: str, outcome: str, detail: Mapping[str, Any]
) -> None:
    """One audit line about ``record`` (raises ``StateStoreError`` when it cannot be written)."""
    audit.append(
        event,
        action_id=record.id,
        action=record.action,
        actor=actor,
        cluster=record.cluster,
        target=record.target,
        detail=detail,
        outcome=outcome,
    )


class RunJournal:
    """The journal of one claimed record, for the process that owns it.

    With a node lock (``guard`` and the run's ``holder``), ``before`` also writes the state onto
    the node's Lease on the cluster, so a process with another state backend can restore the node.
    """

    def __init__(
        self,
        store: PendingStore,
        audit: AuditLog,
        record: PendingAction,
        owner: str,
        *,
        guard: NodeGuard | None = None,
        holder: str = "",
    ) -> None:
        self.store = store
        self.audit = audit
        self.record = record
        self.owner = owner
        self.guard = guard
        self.holder = holder

    async def before(self, step: str, progress: Mapping[str, Any]) -> None:
        """State (store, then the node's Lease), then audit, all written before ``step`` runs;
        ``StateStoreError`` if not."""
        await asyncio.to_thread(self.store.save_progress, self.record.id, self.owner, dict(progress))
        if self.guard is not None and self.holder:
            await asyncio.to_thread(self.guard.renew, self.record, self.holder, dict(progress))
        await asyncio.to_thread(
            audit_entry, self.audit, "step", self.record, BOT_ACTOR, "starting", {"step": step}
        )

    async def after(self, line: str, status: str) -> bool:
        """The step's real outcome; False (logged) when the trail cannot take it."""
        try:
            await asyncio.to_thread(audit_entry, self.audit, "step", self.record, BOT_ACTOR, status, {"step": line})
        except StateStoreError as exc:
            log.warning("step outcome of %s not audited: %s", self.record.id, exc.user_message)
            return False
        return True


@contextlib.asynccontextmanager
async def heartbeat(
    store: PendingStore,
    record: PendingAction,
    owner: str,
    *,
    every_s: float,
    guard: NodeGuard | None = None,
    holder: str = "",
) -> AsyncIterator[None]:
    """Renew ``owner``'s claim on ``record`` (and ``holder``'s node Lease) every ``every_s``
    seconds while the block runs."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            if guard is not None and holder:
                try:
                    await asyncio.to_thread(guard.renew, record, holder)
                except StateStoreError as exc:
                    # the next step's record fails too (its Lease write checks the holder): it stops
                    log.warning("node lock of action %s not renewed: %s", record.id, exc.user_message)
            try:
                if not await asyncio.to_thread(store.heartbeat, record.id, owner):
                    log.warning("action %s is no longer running under this process", record.id)
                    return
            except StateStoreError as exc:
                log.warning("heartbeat of action %s not written: %s", record.id, exc.user_message)

    task = asyncio.create_task(beat(), name=f"heartbeat-{record.id[:8]}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


#: restores what an unfinished record changed; returns (summary, step lines) and never raises
Restorer = Callable[[PendingAction, RunJournal], Awaitable[tuple[str, list[str]]]]
