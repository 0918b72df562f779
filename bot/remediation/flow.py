"""What happens between "the bot offers a fix" and "the fix ran once, or was refused, and why".

``ConfirmFlow`` is the click handling, independent of Slack and of the concrete actions:
``RemediationService.click`` (for a Slack button and for ``gpubot act`` alike) calls ``on_click``
with the id from the button, the clicker, and two callables bound to the action (re-check the
precondition, run). The order of checks is the safety argument:

1. the id must be one we issued (else: refused, "unknown or forged id");
2. the clicker must be an approver (else: nothing is claimed and the offer stays pending; when
   somebody else may approve it, the click becomes an audited approval request naming them,
   otherwise it is refused). Under the two-person rule an approver clicking their own request
   gives the first approval and another approver must second it;
3. a node action takes its node's lock on the cluster (``NodeGuard``: a Lease every actor sees,
   whatever its state), restoring first a run whose holder died there; a node another actor holds
   is refused by name. Then the store claims the record atomically, pending → running, only if it
   has not expired by the *store's* clock and no other action runs on the same node; double
   clicks, Slack retries and a second replica all lose that race and are refused;
4. the precondition is re-checked *after* the claim (re-probe: is the allocation still a zombie?);
5. the approval and the start are written to the audit trail; if they cannot be, nothing runs;
6. only then the action runs, writing its state and each step before the step (``RunJournal``),
   each step's real outcome after it, and renewing its heartbeat; a cancelled run is asked to
   stop, restores what it changed, and its result is recorded before the cancellation goes on.

``recover`` takes over records whose process stopped renewing them (a crash, a lost replica, a
run whose result could not be written), has the action restore what it changed, and records
them ``interrupted``, under the node's lock; a node another process already restored (the lock
says so) is not touched again. A record another live process still renews is never touched.

This module must never import Slack, the Kubernetes client or ``bot.actions``, and never put a
traceback into a message or the audit trail.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from bot.aio import run_to_end
from bot.errors import GpubotError, StateStoreError, error_text
from bot.remediation.journal import BOT_ACTOR, Restorer, RunJournal, audit_entry, heartbeat
from bot.remediation.outcomes import ClickOutcome, RunOutcome, StepResult
from bot.remediation.policy import ApproverPolicy, Approvers, Decision
from bot.state.contracts import AuditLog, NodeGuard, PendingStore
from bot.state.ids import is_well_formed, new_action_id, safe_for_log
from bot.state.records import NodeClaim, PendingAction, process_owner
from bot.state.timestamps import format_ts

log = logging.getLogger(__name__)

__all__ = ["BOT_ACTOR", "ClickOutcome", "ConfirmFlow", "RunOutcome", "StepResult"]
_T = TypeVar("_T")

#: seconds a running record may go without a heartbeat before another process takes it over
DEFAULT_LEASE_S = 30.0


Precondition = Callable[[PendingAction], Awaitable[tuple[bool, str]]]
Runner = Callable[[PendingAction, RunJournal], Awaitable[RunOutcome]]


def node_of(record: PendingAction) -> str:
    return record.target.removeprefix("node/") if record.target.startswith("node/") else record.target


class ConfirmFlow:
    """Offers actions and turns clicks into at most one execution each, auditing every step.

    ``clock`` is this process's clock, used only for what a person reads (the "approved at"
    line); every decision uses the store's clock.
    """

    def __init__(
        self,
        store: PendingStore,
        audit: AuditLog,
        policy: ApproverPolicy,
        *,
        clock: Callable[[], datetime] | None = None,
        ttl_s: int = 900,
        lease_s: float = DEFAULT_LEASE_S,
        owner: str | None = None,
        guard: NodeGuard | None = None,
    ) -> None:
        self.store = store
        self.audit = audit
        self.policy = policy
        self.clock: Callable[[], datetime] = clock or store.now
        self.ttl = timedelta(seconds=ttl_s)
        self.lease_s = lease_s
        self.owner = owner or process_owner()
        #: the per-node lock on the cluster (every actor's); None: the store's lock only
        self.guard = guard
        #: restores an abandoned run found on a node's lock (``recover``'s restorer)
        self.restorer: Restorer | None = None
        #: records this process is running or recovering right now
        self._running: set[str] = set()
        self._recovering = asyncio.Lock()

    @property
    def running(self) -> int:
        """How many actions this process is running now (shutdown waits for them)."""
        return len(self._running)

    # -- offering -------------------------------------------------------------------------

    def offer(
        self,
        action: str,
        params: Mapping[str, str],
        cluster: str,
        requested_by: str,
        channel: str = "",
        finding_code: str | None = None,
        *,
        thread_ts: str | None = None,
    ) -> PendingAction:
        """Record a new pending action; its ``id`` is what the button carries."""
        now = self.store.now()
        record = self.store.create(
            PendingAction(
                id=new_action_id(),
                action=action,
                params=dict(params),
                cluster=cluster,
                requested_by=requested_by,
                channel=channel,
                thread_ts=thread_ts,
                created_at=now,
                expires_at=now + self.ttl,
                finding_code=finding_code,
            )
        )
        audit_entry(
            self.audit,
            "offer",
            record,
            requested_by,
            "offered",
            {
                "params": dict(record.params),
                "finding": finding_code or "",
                "expires_at": format_ts(record.expires_at),
            },
        )
        return record

    # -- clicking -------------------------------------------------------------------------

    async def on_click(
        self,
        action_id: str,
        user_id: str,
        user_groups: Iterable[str],
        *,
        precondition: Precondition,
        run: Runner,
    ) -> ClickOutcome:
        """Check, claim, re-check and run one click; never raises for a refusal."""
        try:
            return await self._click(action_id, user_id, tuple(user_groups), precondition, run)
        except StateStoreError as exc:
            # the store failed before anything was claimed or run; the trail says so if it can
            # (the audit may live in the very store that failed)
            try:
                await self._audit_refusal(action_id, user_id, f"nothing was run: {exc.user_message}")
            except StateStoreError as again:
                log.warning("click on %s not audited: %s", safe_for_log(action_id), again.user_message)
            return ClickOutcome("unavailable", f"Nothing was run: {exc.user_message}.")

    async def _click(
        self, action_id: str, user_id: str, groups: tuple[str, ...], precondition: Precondition, run: Runner
    ) -> ClickOutcome:
        record = await self._io(self.store.get, action_id) if is_well_formed(action_id) else None
        if record is None:
            return await self._unknown(action_id, user_id)

        decision = self.policy.decide(record.action, user_id, groups, record.requested_by)
        if not decision.allowed:
            asked = self.policy.approvers_of(record.action)
            if asked and record.state == "pending":
                return await self._request(record, user_id, decision, asked)
            await self._aaudit("refuse", record, user_id, "refused", {"reason": decision.reason})
            return ClickOutcome(
                "not_allowed", f"You cannot approve {record.action}: {decision.reason}.", record
            )

        guard, holder = self.guard, ""
        recovered: list[PendingAction] = []
        if guard is not None and record.lock_key and record.state == "pending":
            # the node's lock on the cluster first: no actor with another state may act beside us
            holder = self._holder()
            refusal = await self._take_node(guard, replace(record, approved_by=user_id), user_id, holder, recovered)
            if refusal is not None:
                return replace(refusal, recovered=tuple(recovered))
        try:
            outcome = await self._claim_and_run(action_id, user_id, decision.reason, precondition, run, holder)
        finally:
            if guard is not None and holder:
                await run_to_end(self._io(partial(guard.release, record, holder)))
        return replace(outcome, recovered=tuple(recovered)) if recovered else outcome

    async def _claim_and_run(
        self, action_id: str, user_id: str, why_allowed: str, precondition: Precondition, run: Runner, holder: str
    ) -> ClickOutcome:
        """Claim the record in the store (the node's lock, if any, already held by ``holder``), run it."""
        current_or_refusal = await self._claim(action_id, user_id)
        if isinstance(current_or_refusal, ClickOutcome):
            return current_or_refusal
        current = current_or_refusal
        self._running.add(current.id)
        try:
            async with heartbeat(
                self.store, current, self.owner, every_s=self.lease_s / 3, guard=self.guard, holder=holder
            ):
                return await self._run_claimed(current, user_id, why_allowed, precondition, run, holder)
        finally:
            self._running.discard(current.id)

    def _holder(self) -> str:
        """One run's name on a node's lock: this process and a token of its own (never shared)."""
        return f"{self.owner}/{secrets.token_hex(4)}"

    async def _take_node(
        self, guard: NodeGuard, record: PendingAction, user_id: str, holder: str, recovered: list[PendingAction]
    ) -> ClickOutcome | None:
        """Hold ``record``'s node on the cluster; else the refusal. A run whose holder died is
        restored (and recorded interrupted) first, and appended to ``recovered``: its lock may have
        run out only after the caller last looked for such runs, and whoever clicked must hear of it."""
        claim = NodeClaim("busy")
        for _ in range(3):
            claim = await self._io(guard.acquire, record, holder)
            if claim.status == "acquired":
                return None
            if claim.status == "abandoned" and claim.holder is not None:
                try:
                    recovered.append(await self._recover_one(claim.holder, self.restorer))
                finally:
                    await run_to_end(self._io(partial(guard.release, claim.holder, holder, restored=claim.holder.id)))
                continue
            break
        other = claim.holder
        if other is not None and other.id == record.id:
            reason = "already running/done"
            await self._aaudit("refuse", record, user_id, "refused", {"reason": reason, "state": "running"})
            return ClickOutcome("already_taken", f"{self._what(record)} is already running; it runs only once.", record)
        left = f"; its lock on the cluster runs out in {claim.expires_in_s:.0f}s unless renewed" if other else ""
        return await self._busy(record, user_id, other, left)

    async def _busy(
        self, record: PendingAction, user_id: str, holder: PendingAction | None, extra: str = ""
    ) -> ClickOutcome:
        who = f"{holder.action}, started by {holder.approved_by or 'unknown'}" if holder else "by a gpubot process"
        reason = f"another action is running on {node_of(record)} ({who}){extra}"
        await self._aaudit("refuse", record, user_id, "refused", {"reason": reason})
        return ClickOutcome(
            "busy", f"{self._what(record)} was not run: {reason}. Try again once it has finished.", record
        )

    async def on_deny(self, action_id: str, user_id: str, user_groups: Iterable[str]) -> ClickOutcome:
        """An approver turns a pending offer down: it ends ``refused`` and can never run."""
        groups = tuple(user_groups)
        record = await self._io(self.store.get, action_id) if is_well_formed(action_id) else None
        if record is None:
            return await self._unknown(action_id, user_id)
        decision = self.policy.decide(record.action, user_id, groups, record.requested_by)
        if not decision.approver:
            await self._aaudit("refuse", record, user_id, "refused", {"reason": decision.reason})
            return ClickOutcome("not_allowed", f"You cannot deny {record.action}: {decision.reason}.", record)
        current_or_refusal = await self._claim(action_id, user_id)
        if isinstance(current_or_refusal, ClickOutcome):
            return current_or_refusal
        reason = f"denied by {user_id}"
        final = await self._io(self.store.finish, action_id, "refused", reason)
        await self._aaudit("deny", current_or_refusal, user_id, "denied", {"reason": reason})
        return ClickOutcome(
            "denied", f"{self._what(current_or_refusal)} was denied; nothing was done.", final or current_or_refusal
        )

    async def _claim(self, action_id: str, user_id: str) -> PendingAction | ClickOutcome:
        """The record, now ``running`` and this caller's alone; else the refusal to answer with."""
        claim = await self._io(partial(self.store.claim, action_id, approver=user_id, owner=self.owner))
        if claim.status == "unknown" or claim.action is None:
            return await self._unknown(action_id, user_id)
        current = claim.action
        if claim.status == "expired":
            reason = f"the offer expired at {format_ts(current.expires_at)}"
            await self._aaudit("expire", current, user_id, "expired", {"reason": reason})
            return ClickOutcome("expired", f"{self._what(current)} was not run: {reason}.", current)
        if claim.status == "busy" and claim.holder is not None:
            return await self._busy(current, user_id, claim.holder)
        if claim.status != "claimed":
            reason = "already running/done"
            await self._aaudit(
                "refuse", current, user_id, "refused", {"reason": reason, "state": current.state}
            )
            return ClickOutcome(
                "already_taken",
                f"{self._what(current)} is already {current.state}; it runs only once.",
                current,
            )
        return current

    async def _request(
        self, record: PendingAction, user_id: str, decision: Decision, asked: Approvers
    ) -> ClickOutcome:
        """A click by someone who may not approve, on an offer others may: ask them instead.

        Nothing is claimed: the offer stays pending for an approver's click. Under the two-person
        rule an approver clicking their own request gives the first approval; another must second.
        """
        now = self.clock()
        if record.is_expired(now):
            await self._io(self.expire_overdue)
            reason = f"the offer expired at {format_ts(record.expires_at)}"
            return ClickOutcome("expired", f"{self._what(record)} was not run: {reason}.", record)
        detail = {
            "reason": decision.reason,
            "asked": sorted(asked.users | asked.groups),
            "first_approval": decision.approver,
        }
        await self._aaudit("request", record, user_id, "requested", detail)
        who = "a second approver" if decision.approver else "an approver"
        return ClickOutcome(
            "approval_requested",
            f"{self._what(record)} needs {who}: {decision.reason}.",
            record,
            asked=asked,
            first_approval=decision.approver,
        )

    async def _run_claimed(
        self,
        record: PendingAction,
        user_id: str,
        why_allowed: str,
        precondition: Precondition,
        run: Runner,
        holder: str = "",
    ) -> ClickOutcome:
        try:
            holds, why = await precondition(record)
        except asyncio.CancelledError:
            await run_to_end(self._end(record, "failed", "cancelled before it ran; nothing was changed"))
            raise
        except Exception as exc:
            holds, why = False, f"it could not be checked ({error_text(exc)})"
        if not holds:
            reason = f"precondition no longer holds: {why}"
            try:
                final = await self._io(self.store.finish, record.id, "refused", reason)
                await self._aaudit("refuse", record, user_id, "refused", {"reason": reason})
            except StateStoreError as exc:
                return self._not_run(record, exc)
            return ClickOutcome(
                "precondition_failed", f"{self._what(record)} was not run: {reason}.", final or record
            )

        try:
            # on the record before anything changes: who approved it, and that it starts
            await self._aaudit("approve", record, user_id, "approved", {"reason": why_allowed})
            await self._aaudit("start", record, user_id, "started", {"params": dict(record.params)})
        except StateStoreError as exc:
            await self._end(record, "failed", f"not run: {exc.user_message}")
            return self._not_run(record, exc)

        journal = RunJournal(self.store, self.audit, record, self.owner, guard=self.guard, holder=holder)
        task = asyncio.ensure_future(run(record, journal))
        try:
            outcome = await asyncio.shield(task)
        except asyncio.CancelledError:
            # Cut off (shutdown, handler timeout): the action stops at its step and restores what
            # it changed; its outcome is recorded before the cancellation goes on.
            task.cancel()
            try:
                outcome = await run_to_end(task)
            except asyncio.CancelledError:
                # cancelled again while it restored (the outcome stands), or the action did not catch it
                ended = task.done() and not task.cancelled() and task.exception() is None
                outcome = task.result() if ended else RunOutcome(
                    False, "cancelled before it finished; check the target's state by hand"
                )
            await run_to_end(self._record_result(record, user_id, outcome))
            raise
        except Exception as exc:
            text = error_text(exc)
            if not isinstance(exc, GpubotError):
                log.exception("action %s (%s) raised", record.action, record.id)
            final = await self._end(record, "failed", text, {"error": text})
            return ClickOutcome("failed", f"{self._what(record)} failed: {text}", final or record)
        return await self._record_result(record, user_id, outcome)

    async def _record_result(self, record: PendingAction, user_id: str, outcome: RunOutcome) -> ClickOutcome:
        for n, step in enumerate(outcome.steps, start=1):
            if not step.audited:
                await self._try_audit("step", record, BOT_ACTOR, step.status, {"n": n, "step": step.line})
        state: Literal["succeeded", "failed"] = "succeeded" if outcome.ok else "failed"
        final = await self._end(
            record,
            state,
            outcome.summary,
            {"summary": outcome.summary, "approved_by": user_id},
            outcome="ok" if outcome.ok else "failed",
        )
        verb = "succeeded" if outcome.ok else "failed"
        message = f"{self._what(record)} {verb} (approved by {user_id}): {outcome.summary}"
        if final is None:
            message += (
                " The result could not be written to the state file; gpubot records it as soon as"
                " the file is writable again."
            )
        return ClickOutcome(state, message, final or record, tuple(s.line for s in outcome.steps))

    async def _end(
        self,
        record: PendingAction,
        state: str,
        summary: str,
        detail: Mapping[str, Any] | None = None,
        *,
        outcome: str | None = None,
    ) -> PendingAction | None:
        """Finish the record and audit its result; ``None`` (logged) when the store refused either."""
        try:
            final = await self._io(self.store.finish, record.id, state, summary)
            if final is not None:
                await self._aaudit("result", record, BOT_ACTOR, outcome or state, detail or {"error": summary})
        except StateStoreError as exc:
            log.error("result of %s (%s) not recorded: %s", record.action, record.id, exc.user_message)
            return None
        return final

    def _not_run(self, record: PendingAction, exc: StateStoreError) -> ClickOutcome:
        return ClickOutcome(
            "not_run",
            f"{self._what(record)} was not run: {exc.user_message}. Nothing was changed.",
            record,
        )

    # -- housekeeping ---------------------------------------------------------------------

    async def recover(self, restore: Restorer | None = None) -> list[PendingAction]:
        """Take over every running record nobody renews any more, restore, record it interrupted.

        Records of another live process are left alone; so are this process's own running ones.
        Without ``restore`` a record is only reported (never re-run). Returns the records ended.
        """
        async with self._recovering:
            alive, running = await self._renewed_on_the_cluster()
            taken = await self._io(partial(self.store.take_over_stale, self.owner, lease_s=self.lease_s, skip=alive))
            seen = {r.id for r in taken}
            # ours, yet no run of ours holds it: its result could not be written when it ended
            orphans = [
                r
                for r in await self._io(partial(self.store.list, states=["running"], limit=1000))
                if r.owner == self.owner and r.id not in self._running and r.id not in seen
            ]
            ended = []
            for record in [*taken, *orphans]:
                self._running.add(record.id)
                try:
                    done = await self._recover_node(record, restore)
                    if done is not None:
                        ended.append(done)
                except StateStoreError as exc:
                    log.warning("could not recover %s yet: %s", record.id, exc.user_message)
                finally:
                    self._running.discard(record.id)
            if self.guard is not None and restore is not None:
                # runs of any state whose holder died on a node's lock (a terminal killed beside
                # this bot): restored now, not only when someone touches the node
                # (this store's own runs go the way above, once stale: their owner becomes this process)
                for dead in await self._io(self.guard.abandoned):
                    if dead.id not in running and dead.id not in self._running:
                        done = await self.reclaim_node(dead)
                        ended += [done] if done is not None else []
            return ended

    async def _renewed_on_the_cluster(self) -> tuple[set[str], set[str]]:
        """(running records whose node lock is still renewed, every running record's id): the
        first have a live process, whatever its store heartbeat says (a loaded host), so recovery
        must not take them from it."""
        guard = self.guard
        if guard is None:
            return set(), set()
        alive: set[str] = set()
        records = await self._io(partial(self.store.list, states=["running"], limit=1000))
        for record in records:
            if record.lock_key and record.id not in self._running:
                try:
                    if await self._io(guard.renewed, record):
                        alive.add(record.id)
                except StateStoreError as exc:
                    log.info("node lock of %s not read (%s); its store heartbeat decides", record.id, exc.user_message)
        return alive, {r.id for r in records}

    async def reclaim_node(self, record: PendingAction) -> PendingAction | None:
        """Before anything reads ``record``'s node for a new run (a terminal's precondition): if a
        run whose process died still holds the node's lock, restore the node and record that run
        ``interrupted`` (returned). A live holder is left alone; its click will be refused."""
        guard = self.guard
        if guard is None or not record.lock_key:
            return None
        holder = self._holder()
        claim = await self._io(guard.acquire, record, holder)
        if claim.status == "busy":
            return None
        dead = claim.holder if claim.status == "abandoned" else None
        try:
            return await self._recover_one(dead, self.restorer) if dead is not None else None
        finally:
            await run_to_end(
                self._io(partial(guard.release, dead or record, holder, restored=dead.id if dead else ""))
            )

    async def _recover_node(self, record: PendingAction, restore: Restorer | None) -> PendingAction | None:
        """Recover one stale record, under its node's lock when it has one; None: left alone."""
        guard = self.guard
        if guard is None or not record.lock_key:
            return await self._recover_one(record, restore)
        holder = self._holder()
        adoption = await self._io(guard.adopt, record, holder)
        if adoption == "live":
            log.info("action %s: its node lock is still renewed on the cluster; left alone", record.id)
            return None
        if adoption == "elsewhere":
            return await self._recover_one(record, _restored_elsewhere)
        try:
            return await self._recover_one(record, restore)
        finally:
            await run_to_end(self._io(partial(guard.release, record, holder, restored=record.id)))

    async def _recover_one(self, record: PendingAction, restore: Restorer | None) -> PendingAction:
        """Restore ``record`` (the caller holds its node's lock, if it has one), finish it
        ``interrupted`` where it is in this store, and audit it here."""
        last = str(record.progress.get("step") or "")
        where = f"after it started '{last}'" if last else "before its first step"
        journal = RunJournal(self.store, self.audit, record, self.owner)
        if restore is not None:
            restored, _lines = await restore(record, journal)
        else:
            restored = "not re-run; check the target's state by hand"
        summary = f"interrupted {where} (the process running it stopped); {restored}"
        # the trail first: a process stopped between the two writes leaves the record running,
        # so the next recovery restores it again (each restore step is idempotent) and the trail
        # says "interrupted" twice; the other order left a record ended with no trail entry for it
        await self._aaudit(
            "interrupted",
            record,
            BOT_ACTOR,
            "interrupted",
            {
                "reason": f"the process running it stopped {where}; it was not re-run",
                "restore": restored,
                "approved_by": record.approved_by or "",
            },
        )
        final = await self._io(self.store.finish, record.id, "interrupted", summary)
        # a run of another state (found on its node's lock) is not in this store: say how it ended
        return final or replace(record, state="interrupted", result_summary=summary)

    def expire_overdue(self) -> list[PendingAction]:
        """Expire every pending offer past its time (audited); the view updates their messages."""
        expired = self.store.expire_overdue()
        for record in expired:
            audit_entry(
                self.audit,
                "expire",
                record,
                BOT_ACTOR,
                "expired",
                {"reason": f"the offer expired at {format_ts(record.expires_at)}"},
            )
        return expired

    # -- helpers --------------------------------------------------------------------------

    @staticmethod
    def _what(record: PendingAction) -> str:
        return f"{record.action} on {record.target}" if record.target else record.action

    async def _unknown(self, action_id: str, user_id: str) -> ClickOutcome:
        await self._audit_refusal(action_id, user_id, "unknown or forged id")
        return ClickOutcome("unknown", "This action is unknown or was forged; nothing was done.")

    async def _audit_refusal(self, action_id: str, user_id: str, reason: str) -> None:
        """A refusal of a click that matched no usable record: the id is user text, so logged safely."""
        await self._io(
            partial(
                self.audit.append,
                "refuse",
                action_id=safe_for_log(action_id),
                actor=user_id,
                detail={"reason": reason},
                outcome="refused",
            )
        )

    async def _aaudit(
        self, event: str, record: PendingAction, actor: str, outcome: str, detail: Mapping[str, Any]
    ) -> None:
        await self._io(audit_entry, self.audit, event, record, actor, outcome, detail)

    async def _try_audit(
        self, event: str, record: PendingAction, actor: str, outcome: str, detail: Mapping[str, Any]
    ) -> None:
        try:
            await self._aaudit(event, record, actor, outcome, detail)
        except StateStoreError as exc:
            log.warning("audit %s of %s not written: %s", event, record.id, exc.user_message)

    @staticmethod
    async def _io(fn: Callable[..., _T], *args: Any) -> _T:
        # The store may block (SQLite lock wait, a Kubernetes API call): keep it off the event loop.
        return await asyncio.to_thread(fn, *args)


async def _restored_elsewhere(_record: PendingAction, _journal: RunJournal) -> tuple[str, list[str]]:
    """The restorer of a record whose node another process already took over (and restored)."""
    return "another gpubot process took its node over and restored it; the node was not touched again", []
