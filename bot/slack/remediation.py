"""The remediation loop as Slack shows it: buttons for offers, a click's progress in place.

``SlackRemediation`` is what the Slack app is given for remediation (``RemediationOffers`` and
the click hook): it registers each offered fix with the remediation service and hands back the
button, learns where the buttons were posted, and turns a click into one call of the service's
``click`` (the app's click hook): the clicked button alone becomes "approved by <@U…> at …,
running", then the outcome, and the step details go into the report's thread. Clickers named
only through a Slack user group are looked up here, and only when group approvers are configured.
``sweep_expired`` (run periodically by ``serve``) and ``start`` (after a restart) say in place
what the service expired or found interrupted.

This module only talks to Slack; the remediation service decides who may run what, and runs it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from slack_sdk.web.async_client import AsyncWebClient

from bot.remediation import PendingAction, RemediationService
from bot.report import Finding, Remediation, Report
from bot.slack.hooks import Click, OfferButton, OfferContext, PostedOffers
from bot.slack.offer_editor import OfferEditor
from bot.slack.offer_messages import expired_text, final_text, interrupted_text, running_text, steps_text
from bot.slack.web import SLACK_FAILURES, failure_text

log = logging.getLogger("gpubot.slack.remediation")


class SlackRemediation:
    """Offers, clicks, expiry and restart notes for one bot process, on one Slack workspace."""

    def __init__(self, remediation: RemediationService, client: AsyncWebClient | None) -> None:
        self.remediation = remediation
        self.client = client
        self.messages = OfferEditor(client)

    async def start(self) -> list[PendingAction]:
        """After a restart: restore each run that was cut off (never re-run) and say so where it
        was approved."""
        return await self.recover()

    async def recover(self) -> list[PendingAction]:
        """Restore the runs nobody renews any more (a restart, a lost replica) and note each in its
        thread; a live replica's runs are left alone."""
        interrupted = await self.remediation.recover()
        for record in interrupted:
            if record.channel:
                thread = record.thread_ts or record.message_ts
                await self.messages.post(record.channel, interrupted_text(record), thread_ts=thread)
        return interrupted

    async def sweep(self) -> None:
        """The periodic housekeeping of ``serve``: expire unclicked offers, recover abandoned runs."""
        await self.sweep_expired()
        await self.recover()

    async def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: OfferContext
    ) -> OfferButton | None:
        """The button for one offered fix, or ``None`` (listed without one)."""
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

    async def on_click(self, click: Click) -> None:
        """The app's click hook: one click through the service, and what it did, in place."""
        groups = await self.user_groups(click.user_id)
        thread = click.thread_ts

        async def announce(record: PendingAction) -> None:
            nonlocal thread
            thread = record.thread_ts or click.thread_ts
            if click.message_ts:
                await self.remediation.locate(
                    [record.id], channel=click.channel, message_ts=click.message_ts, thread_ts=thread
                )
            at = self.remediation.flow.clock()
            text = running_text(record, click.user_id, at, dry_run=self.remediation.settings.dry_run)
            await self.messages.update_offers(
                click.channel, click.message_ts, [(record.id, text)],
                blocks=click.blocks, thread_ts=thread or click.message_ts,
            )

        outcome = await self.remediation.click(click.offer_id, click.user_id, groups, on_running=announce)
        record = outcome.action
        thread = thread or (record.thread_ts if record else None) or click.message_ts
        shown = False
        if outcome.updates_offer and record is not None:
            shown = await self.messages.update_offers(
                click.channel, click.message_ts, [(record.id, final_text(outcome, click.user_id))],
                blocks=click.blocks, thread_ts=thread,
            )
        if not shown:
            # a refusal, or Slack would take neither the edit nor the thread note: tell the clicker
            await self.messages.ephemeral(click.response_url, outcome.message)
        if outcome.steps and click.channel:
            await self.messages.post(click.channel, steps_text(outcome.steps), thread_ts=thread or None)
