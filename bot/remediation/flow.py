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
3. the store claims the record atomically, pending → running, only if not expired; double
   clicks, Slack retries and a second replica all lose that race and are refused;
4. the precondition is re-checked *after* the claim (re-probe: is the allocation still a zombie?);
5. only then the action runs; its steps and result are audited and the record finished.

This module must never import Slack, the Kubernetes client or ``bot.actions``, and never put a
traceback into a message or the audit trail.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from bot.errors import GpubotError, error_text
from bot.remediation.audit import AuditLog, format_ts
from bot.remediation.ids import is_well_formed, new_action_id, safe_for_log
from bot.remediation.policy import ApproverPolicy, Approvers, Decision
from bot.remediation.store import PendingAction, PendingStore

log = logging.getLogger(__name__)

#: the actor name the bot itself uses in the audit trail
BOT_ACTOR = "gpubot"
_T = TypeVar("_T")

ClickStatus = Literal[
    "unknown",
    "not_allowed",
    "approval_requested",
    "denied",
    "expired",
    "already_taken",
    "precondition_failed",
    "succeeded",
    "failed",
]


@dataclass(frozen=True)
class RunOutcome:
    """What an action reports when it returns (rather than raises)."""

    ok: bool
    #: one line for people
    summary: str
    #: what it did, in order (cordoned, backed up, restarted…); each becomes an audit ``step``
    steps: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ClickOutcome:
    """The answer to one click, for the view to render."""

    status: ClickStatus
    #: one line for people, no traceback
    message: str
    #: the record as it stands after the click (``None`` for an unknown id)
    action: PendingAction | None = None
    steps: tuple[str, ...] = ()
    #: ``approval_requested``: who may approve it (the view asks them)
    asked: Approvers | None = None
    #: ``approval_requested``: the clicker is an approver stopped only by the two-person rule, so
    #: their click is the first approval and another approver must second it
    first_approval: bool = False

    @property
    def executed(self) -> bool:
        """The action ran (to success or failure) because of this click."""
        return self.status in ("succeeded", "failed")

    @property
    def updates_offer(self) -> bool:
        """The offer message should be replaced: its buttons no longer apply.

        False for refusals that leave the offer as it was (not an approver, unknown id) and for a
        click that lost the race: the winner updates the message.
        """
        return self.status in ("expired", "precondition_failed", "succeeded", "failed", "denied")


Precondition = Callable[[PendingAction], Awaitable[tuple[bool, str]]]
Runner = Callable[[PendingAction], Awaitable[RunOutcome]]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ConfirmFlow:
    """Offers actions and turns clicks into at most one execution each, auditing every step."""

    def __init__(
        self,
        store: PendingStore,
        audit: AuditLog,
        policy: ApproverPolicy,
        *,
        clock: Callable[[], datetime] = _utcnow,
        ttl_s: int = 900,
    ) -> None:
        self.store = store
        self.audit = audit
        self.policy = policy
        self.clock = clock
        self.ttl = timedelta(seconds=ttl_s)

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
        now = self.clock()
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
        self._audit(
            "offer",
            record,
            requested_by,
            "offered",
            {
                "params": dict(record.params),
                "finding": finding_code or "",
                "expires_at": format_ts(record.expires_at),
            },
            ts=now,
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
        groups = tuple(user_groups)
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

        current_or_refusal = await self._claim(action_id, user_id)
        if isinstance(current_or_refusal, ClickOutcome):
            return current_or_refusal
        current = current_or_refusal
        try:
            return await self._run_claimed(current, user_id, decision.reason, precondition, run)
        except asyncio.CancelledError:
            # Cut off mid-run (shutdown, handler timeout): say so now rather than leave it running.
            text = "cancelled before it finished; check the target's state by hand"
            if self.store.finish(current.id, "failed", text, now=self.clock()) is not None:
                self._audit("result", current, BOT_ACTOR, "failed", {"error": text})
            raise

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
        final = await self._io(partial(self.store.finish, action_id, "refused", reason, now=self.clock()))
        await self._aaudit("deny", current_or_refusal, user_id, "denied", {"reason": reason})
        return ClickOutcome(
            "denied", f"{self._what(current_or_refusal)} was denied; nothing was done.", final or current_or_refusal
        )

    async def _claim(self, action_id: str, user_id: str) -> PendingAction | ClickOutcome:
        """The record, now ``running`` and this caller's alone; else the refusal to answer with."""
        claim = await self._io(partial(self.store.claim, action_id, approver=user_id, now=self.clock()))
        if claim.status == "unknown" or claim.action is None:
            return await self._unknown(action_id, user_id)
        current = claim.action
        if claim.status == "expired":
            reason = f"the offer expired at {format_ts(current.expires_at)}"
            await self._aaudit("expire", current, user_id, "expired", {"reason": reason})
            return ClickOutcome("expired", f"{self._what(current)} was not run: {reason}.", current)
        if claim.status == "already_taken":
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
        self, record: PendingAction, user_id: str, why_allowed: str, precondition: Precondition, run: Runner
    ) -> ClickOutcome:
        try:
            holds, why = await precondition(record)
        except Exception as exc:
            holds, why = False, f"it could not be checked ({error_text(exc)})"
        if not holds:
            reason = f"precondition no longer holds: {why}"
            final = await self._io(partial(self.store.finish, record.id, "refused", reason, now=self.clock()))
            await self._aaudit("refuse", record, user_id, "refused", {"reason": reason})
            return ClickOutcome(
                "precondition_failed", f"{self._what(record)} was not run: {reason}.", final or record
            )

        await self._aaudit("approve", record, user_id, "approved", {"reason": why_allowed})
        await self._aaudit("start", record, user_id, "started", {"params": dict(record.params)})
        try:
            outcome = await run(record)
        except Exception as exc:
            text = error_text(exc)
            if not isinstance(exc, GpubotError):
                log.exception("action %s (%s) raised", record.action, record.id)
            final = await self._io(partial(self.store.finish, record.id, "failed", text, now=self.clock()))
            await self._aaudit("result", record, BOT_ACTOR, "failed", {"error": text})
            return ClickOutcome("failed", f"{self._what(record)} failed: {text}", final or record)

        for n, step in enumerate(outcome.steps, start=1):
            await self._aaudit("step", record, BOT_ACTOR, "ok", {"n": n, "step": step})
        state: Literal["succeeded", "failed"] = "succeeded" if outcome.ok else "failed"
        final = await self._io(
            partial(self.store.finish, record.id, state, outcome.summary, now=self.clock())
        )
        await self._aaudit(
            "result",
            record,
            BOT_ACTOR,
            "ok" if outcome.ok else "failed",
            {"summary": outcome.summary, "approved_by": user_id},
        )
        verb = "succeeded" if outcome.ok else "failed"
        return ClickOutcome(
            state,
            f"{self._what(record)} {verb} (approved by {user_id}): {outcome.summary}",
            final or record,
            tuple(outcome.steps),
        )

    def record_step(self, record: PendingAction, text: str) -> None:
        """Audit one step while an action is still running, so a crash leaves a trace of it.

        For actions that want live progress; ``RunOutcome.steps`` is audited at the end either way.
        """
        self._audit("step", record, BOT_ACTOR, "in-progress", {"step": text})

    # -- housekeeping ---------------------------------------------------------------------

    def recover(self) -> list[PendingAction]:
        """At start-up: every record found running was cut off; mark it interrupted, never re-run."""
        interrupted = self.store.mark_interrupted_on_start(now=self.clock())
        for record in interrupted:
            self._audit(
                "interrupted",
                record,
                BOT_ACTOR,
                "interrupted",
                {
                    "reason": "the bot restarted while the action was running; it was not re-run",
                    "approved_by": record.approved_by or "",
                },
            )
        return interrupted

    def expire_overdue(self) -> list[PendingAction]:
        """Expire every pending offer past its time (audited); the view updates their messages."""
        expired = self.store.expire_overdue(self.clock())
        for record in expired:
            self._audit(
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
        await self._io(
            partial(
                self.audit.append,
                "refuse",
                action_id=safe_for_log(action_id),
                actor=user_id,
                detail={"reason": "unknown or forged id"},
                outcome="refused",
                ts=self.clock(),
            )
        )
        return ClickOutcome("unknown", "This action is unknown or was forged; nothing was done.")

    def _audit(
        self,
        event: str,
        record: PendingAction,
        actor: str,
        outcome: str,
        detail: Mapping[str, Any],
        *,
        ts: datetime | None = None,
    ) -> None:
        self.audit.append(
            event,
            action_id=record.id,
            action=record.action,
            actor=actor,
            cluster=record.cluster,
            target=record.target,
            detail=detail,
            outcome=outcome,
            ts=ts or self.clock(),
        )

    async def _aaudit(
        self, event: str, record: PendingAction, actor: str, outcome: str, detail: Mapping[str, Any]
    ) -> None:
        await self._io(partial(self._audit, event, record, actor, outcome, detail))

    @staticmethod
    async def _io(fn: Callable[..., _T], *args: Any) -> _T:
        # The store may block (SQLite lock wait, a Kubernetes API call): keep it off the event loop.
        return await asyncio.to_thread(fn, *args)
