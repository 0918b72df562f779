"""The remediation loop as Slack shows it: buttons for offers, approval requests, progress in place.

``SlackRemediation`` is what the Slack app is given for remediation (``RemediationOffers`` and
the click hook). It registers each offered fix with the remediation service and hands back the
button, but only for actions somebody may approve (a button nobody can use is noise); it learns
where the buttons were posted, and turns a click into one call of the service:

- an approver's click: the clicked button alone becomes "approved by <@U…> at …, running", then
  the outcome, and the step details go into the report's thread;
- a click by someone who may not approve becomes an approval request: a message mentioning the
  approvers (user groups as ``<!subteam^…>``) with Approve and Deny buttons, and the clicker is
  told, privately, who was asked. Under the two-person rule it says who approved and who must
  second. Approve runs exactly what the report's button would (the same single-use claim);
  the report's button line and the request both show the outcome.

Clickers named only through a Slack user group are looked up here, and only when group approvers
are configured. ``sweep_expired`` (run periodically by ``serve``) and ``start`` (after a restart)
say in place what the service expired or found interrupted.

This module only talks to Slack; the remediation service decides who may run what, and runs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import Metrics, log_event
from bot.remediation import ClickOutcome, PendingAction, RemediationService
from bot.report import Finding, Remediation, Report
from bot.slack.hooks import Click, OfferButton, OfferContext, PostedOffers
from bot.slack.offer_editor import OfferEditor
from bot.slack.offer_messages import (
    approval_request_blocks,
    asked_text,
    expired_text,
    final_text,
    interrupted_text,
    running_text,
    settle_request,
    steps_text,
)
from bot.slack.web import SLACK_FAILURES, failure_text

log = logging.getLogger("gpubot.slack.remediation")

#: approval requests this process remembers (offer id -> where the request message is)
MAX_REQUESTS = 1024


class SlackRemediation:
    """Offers, clicks, approval requests, expiry and restart notes for one bot process."""

    def __init__(
        self, remediation: RemediationService, client: AsyncWebClient | None, *, metrics: Metrics | None = None
    ) -> None:
        self.remediation = remediation
        self.client = client
        self.messages = OfferEditor(client)
        self.metrics = metrics or Metrics()
        #: offer id -> (channel, ts) of its open approval request
        self.requests: dict[str, tuple[str, str]] = {}
        self._request_lock = asyncio.Lock()

    async def start(self) -> list[PendingAction]:
        """After a restart: restore each run that was cut off (never re-run) and say so where it
        was approved."""
        return await self.recover()

    async def recover(self) -> list[PendingAction]:
        """Restore the runs nobody renews any more (a restart, a lost replica) and note each in its
        thread; a live replica's runs are left alone."""
        interrupted = await self.remediation.recover()
        await self._say_interrupted(interrupted)
        return interrupted

    async def _say_interrupted(self, interrupted: Sequence[PendingAction]) -> None:
        """Each restored run's status line says it was interrupted and how its target was left,
        where it was approved: whether its record came from this state or only from its node's
        Lease (another process's run, whose blocks and place the Lease carries)."""
        for record in interrupted:
            if not record.channel:
                continue
            thread = record.thread_ts or record.message_ts
            if record.message_ts:
                # its status line, from the blocks whoever announced the run kept in the shared state
                # (this process may never have seen the message); without them, a thread note
                await self.messages.update_offers(
                    record.channel, record.message_ts, [(record.id, interrupted_text(record))],
                    blocks=_kept_blocks(record), thread_ts=thread,
                )
            else:
                await self.messages.post(record.channel, interrupted_text(record), thread_ts=thread)

    async def sweep(self) -> None:
        """The periodic housekeeping of ``serve``: expire unclicked offers, recover abandoned runs."""
        await self.sweep_expired()
        await self.recover()

    async def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: OfferContext
    ) -> OfferButton | None:
        """The button for one offered fix, or ``None`` (listed without one): nobody may approve
        the action, or it cannot be offered."""
        if not self.remediation.approvers_of(remediation.action):
            return None
        record = await self.remediation.offer(
            remediation.action,
            remediation.params,
            cluster=context.cluster or report.cluster or "",
            requested_by=context.user_id,
            channel=context.channel_id,
            finding_code=finding.code,
        )
        if record is None:
            return None
        self.metrics.offers.labels(action=record.action).inc()
        return OfferButton(record.id, self.remediation.blast_radius(record.action))

    async def offers_posted(self, posted: PostedOffers) -> None:
        """Remember where each offer's button is, for clicks and the expiry sweep."""
        self.messages.remember(posted.channel, posted.message_ts, posted.blocks)
        await self.remediation.locate(
            posted.offer_ids, channel=posted.channel, message_ts=posted.message_ts, thread_ts=posted.thread_ts
        )

    async def sweep_expired(self) -> list[PendingAction]:
        """Expire overdue offers and turn their buttons into "expired" lines, one edit per message.

        Offers never posted to a known message (answered through ``response_url``) only change state.
        """
        expired = await self.remediation.sweep_expired()
        by_message: dict[tuple[str, str], list[PendingAction]] = {}
        for record in expired:
            if record.channel and record.message_ts:
                by_message.setdefault((record.channel, record.message_ts), []).append(record)
            await self._settle_request(record.id, expired_text(record))
        for (channel, ts), records in by_message.items():
            await self.messages.update_offers(
                channel, ts, [(r.id, expired_text(r)) for r in records], thread_ts=records[0].thread_ts
            )
        return expired

    async def user_groups(self, user_id: str) -> list[str]:
        """The configured approver groups ``user_id`` belongs to (no Slack call if none are configured)."""
        if not self.remediation.group_approvers or self.client is None:
            return []
        found = []
        for group in self.remediation.group_approvers:
            try:
                resp = await self.client.usergroups_users_list(usergroup=group)
            except SLACK_FAILURES as exc:
                log.warning("usergroups.users.list %s failed: %s", group, failure_text(exc))
                continue
            users: Sequence[str] = resp.get("users") or []
            if user_id in users:
                found.append(group)
        return found

    # -- clicks -----------------------------------------------------------------------------------

    async def on_click(self, click: Click) -> None:
        """The app's click hook: the report's button, or Approve / Deny on an approval request."""
        groups = await self.user_groups(click.user_id)
        if click.kind == "deny":
            outcome = await self.remediation.deny(click.offer_id, click.user_id, groups)
            await self._after(click, outcome)
            return
        from_request = click.kind == "approve"
        # where the offer's button is: the clicked message, or (from a request) the report
        where = _Where(click.channel, click.message_ts, click.thread_ts, click.blocks)

        async def announce(record: PendingAction) -> None:
            nonlocal where
            if from_request:
                where = _Where(record.channel, record.message_ts or "", record.thread_ts, None)
            else:
                where = _Where(where.channel, where.ts, record.thread_ts or click.thread_ts, where.blocks)
                if click.message_ts:
                    await self.remediation.locate(
                        [record.id], channel=click.channel, message_ts=click.message_ts, thread_ts=where.thread
                    )
            at = self.remediation.flow.clock()
            text = running_text(record, click.user_id, at, dry_run=self.remediation.settings.dry_run)
            await self._settle_request(record.id, text, keep=True)
            await self.messages.update_offers(
                where.channel, where.ts, [(record.id, text)], blocks=where.blocks, thread_ts=where.thread or where.ts
            )
            shown = self.messages.remembered(where.channel, where.ts)
            if shown:
                here = replace(record, channel=where.channel, message_ts=where.ts, thread_ts=where.thread)
                await self.remediation.keep_blocks(here, shown)

        outcome = await self.remediation.click(click.offer_id, click.user_id, groups, on_running=announce)
        # a dead run whose lock ran out just now: this click restored its node before taking it
        await self._say_interrupted(outcome.recovered)
        record = outcome.action
        if from_request and record is not None:
            where = _Where(record.channel, record.message_ts or "", record.thread_ts, None)
        await self._after(click, outcome, where)

    async def _after(self, click: Click, outcome: ClickOutcome, where: _Where | None = None) -> None:
        """Count the outcome, then show it: in place of the button, on the request, or privately."""
        record = outcome.action
        self._count(outcome)
        if where is None:  # a deny: the offer's button is in the report the record points at
            where = _Where(record.channel, record.message_ts or "", record.thread_ts, None) if record else _NOWHERE
        thread = where.thread or (record.thread_ts if record else None) or where.ts
        if outcome.status == "approval_requested" and record is not None:
            if click.kind == "run":
                await self._ask(click, outcome, record)
            else:  # Approve on a request by someone who may not approve: the request stays open
                await self.messages.ephemeral(click.response_url, outcome.message)
            return
        shown = False
        if outcome.updates_offer and record is not None:
            text = final_text(outcome, click.user_id)
            await self._settle_request(record.id, text, clicked=click)
            shown = await self.messages.update_offers(
                where.channel, where.ts, [(record.id, text)], blocks=where.blocks, thread_ts=thread
            )
        if not shown:
            # a refusal, or Slack would take neither the edit nor the thread note: tell the clicker
            await self.messages.ephemeral(click.response_url, outcome.message)
        if outcome.steps and where.channel:
            await self.messages.post(where.channel, steps_text(outcome.steps), thread_ts=thread or None)

    async def _ask(self, click: Click, outcome: ClickOutcome, record: PendingAction) -> None:
        """Post the approval request (once per offer) and tell the clicker who was asked."""
        assert outcome.asked is not None
        note = asked_text(record, outcome.asked, first_approval=outcome.first_approval, user_id=click.user_id)
        async with self._request_lock:
            if record.id in self.requests:
                await self.messages.ephemeral(click.response_url, "Already asked: " + note)
                return
            channel = self.remediation.settings.approval_channel or record.channel or click.channel
            thread = None
            if not self.remediation.settings.approval_channel:
                thread = record.thread_ts or record.message_ts or click.thread_ts or click.message_ts or None
            blocks = approval_request_blocks(
                record,
                click.user_id,
                outcome.asked,
                first_approval=outcome.first_approval,
                blast_radius=self.remediation.blast_radius(record.action),
            )
            text = blocks[0]["text"]["text"]
            ts = await self.messages.post_blocks(channel, text, blocks, thread_ts=thread)
            if ts:
                self.requests[record.id] = (channel, ts)
                while len(self.requests) > MAX_REQUESTS:
                    self.requests.pop(next(iter(self.requests)))
        self.metrics.approval_requests.labels(action=record.action).inc()
        await self.messages.ephemeral(click.response_url, note if ts else outcome.message)

    async def _settle_request(
        self, offer_id: str, text: str, *, keep: bool = False, clicked: Click | None = None
    ) -> None:
        """The request's Approve/Deny give way to ``text`` (kept open for a later line if ``keep``).

        A request this process did not post (a restart in between) is known from the click on it.
        """
        where = self.requests.get(offer_id) if keep else self.requests.pop(offer_id, None)
        if where is None and clicked is not None and clicked.kind != "run" and clicked.blocks:
            self.messages.remember(clicked.channel, clicked.message_ts, clicked.blocks)
            where = (clicked.channel, clicked.message_ts)
        if where is None:
            return
        channel, ts = where
        await self.messages.edit(channel, ts, lambda blocks: settle_request(blocks, offer_id, text), text)

    def _count(self, outcome: ClickOutcome) -> None:
        action = outcome.action.action if outcome.action else "unknown"
        log_event(log, "remediation click answered", action=action, status=outcome.status,
                  offer=outcome.action.id if outcome.action else "")
        if outcome.executed:
            self.metrics.approvals.labels(action=action).inc()
            self.metrics.action_outcomes.labels(action=action, outcome=outcome.status).inc()
        elif outcome.status != "approval_requested":
            self.metrics.refusals.labels(action=action, reason=outcome.status).inc()


@dataclass(frozen=True)
class _Where:
    """The message that carries an offer's button: channel, ts, thread and (if known) its blocks."""

    channel: str
    ts: str
    thread: str | None
    blocks: Sequence[Mapping[str, Any]] | None


_NOWHERE = _Where("", "", None, None)


def _kept_blocks(record: PendingAction) -> list[dict[str, Any]] | None:
    """The blocks of the record's message as the shared state kept them; None if none or unreadable."""
    try:
        blocks = json.loads(record.message_blocks) if record.message_blocks else None
    except ValueError:
        return None
    return [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else None
