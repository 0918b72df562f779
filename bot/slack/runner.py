"""What happens after the ack: run the command, then post the answer where it was asked.

Order in the channel: a "diagnosing…" placeholder at once, the answer as a thread reply (the
verdict, one part per cause, one button per distinct fix), the evidence as the next reply, the
placeholder updated to the verdict, the whole report attached as a file when a message had to be
cut, and for node-status over more than ``PICTURE_MIN_NODES`` nodes a PNG of the cards by state.
A private answer (``--private``, or a channel in ``private_channels``) goes only to the asker,
through the command's ``response_url``, without buttons. When the answer carries remediation
buttons, the offers hook is told where that message landed (channel, ts, thread), so a click or
an expiry can later edit just one button.
Where the bot may not post (a DM, a private channel it is not in), or Slack still refuses a post
after the client's retries, the answer goes through the command's ``response_url`` instead; a
placeholder that could not be updated gets a note there. Every such failure is counted and logged
with Slack's reason, never reported as an internal error. Help and runbooks answer only the asker
(ephemeral). This module renders nothing itself and never runs a remediation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import Invocation
from bot.errors import GpubotError
from bot.observability import Metrics, log_event
from bot.report import Report
from bot.slack import blocks as B
from bot.slack import limits as L
from bot.slack.hooks import DiagnosisService, OfferButton, OfferContext, PostedOffers, RemediationOffers
from bot.slack.identities import SlackIdentities
from bot.slack.offer_messages import offer_ids_in
from bot.slack.plaintext import full_text
from bot.slack.slots import DiagnosisSlots
from bot.slack.web import SLACK_FAILURES, failure_text, response_hook
from bot.views.groups import FixKey, group_findings
from bot.views.node_picture import PICTURE_MIN_NODES, render_node_picture

log = logging.getLogger("gpubot.slack")

#: response_url accepts at most five messages; keep one for errors
MAX_EPHEMERAL_PAGES = 4
#: evidence messages posted under a report; beyond them the full report is attached
MAX_DETAIL_MESSAGES = 3
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
NOT_STARTED = "gpubot restarted before this diagnosis could start; please ask again."
#: an Answerer built without a limit (tests, one-off use) runs every diagnosis at once
UNLIMITED = 1 << 30


@dataclass(frozen=True)
class SlashRequest:
    """The parts of a slash-command payload the answer needs."""

    user_id: str
    channel_id: str
    team_id: str
    text: str
    response_url: str
    #: ``time.monotonic()`` when the request arrived
    received: float


def target_words(inv: Invocation) -> str:
    if inv.name:
        return f"{inv.kind.lower()} {inv.namespace}/{inv.name}"
    if inv.command == "node-status":
        return "nodes " + ", ".join(inv.nodes) if inv.nodes else "all nodes"
    return inv.command


def outcome_of(report: Report) -> str:
    return "problem" if any(f.severity in ("critical", "warning") for f in report.findings) else "ok"


class Answerer:
    """Runs one invocation through the service and posts the result."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        service: DiagnosisService,
        metrics: Metrics,
        offers: RemediationOffers | None = None,
        identities: SlackIdentities | None = None,
        slots: DiagnosisSlots | None = None,
    ) -> None:
        self._client = client
        #: diagnoses wait here for a free slot (help and runbooks do not); none: no limit
        self._slots = slots or DiagnosisSlots(UNLIMITED)
        self._service = service
        self._metrics = metrics
        self._offers = offers
        self._identities = identities

    async def answer(self, inv: Invocation, req: SlashRequest) -> None:
        started = time.monotonic()
        outcome = "error"
        report: Report | None = None
        try:
            if inv.command in ("help", "runbook"):
                report = await self._service.run(inv)
                await self._answer_text(report, req)
            else:
                if self._identities is not None and self._identities.enabled:
                    # per-user authority: the diagnosis reads as the asker's Kubernetes identity
                    inv = dataclasses.replace(inv, identity=await self._identities.identity_for(req.user_id))
                if inv.private:
                    report = await self._diagnose_privately(inv, req)
                else:
                    report = await self._diagnose(inv, req)
            outcome = outcome_of(report)
        except GpubotError as exc:
            outcome = "usage"
            await self._ephemeral(req, exc.user_message)
        except Exception:
            log.exception("command failed", extra={"command": inv.command, "channel": req.channel_id})
            await self._ephemeral(req, "gpubot hit an internal error; the operators can find it in the logs.")
        finally:
            seconds = time.monotonic() - started
            self._metrics.commands.labels(subcommand=inv.command, outcome=outcome).inc()
            self._metrics.command_duration.labels(subcommand=inv.command).observe(seconds)
            for skipped in report.skipped if report else []:
                self._metrics.probe_errors.labels(probe=skipped.what.split(" ")[0].split(":")[0][:40]).inc()
            log_event(
                log,
                "command",
                command=inv.command,
                user=req.user_id,
                channel=req.channel_id,
                cluster=(report.cluster if report and report.cluster else inv.cluster),
                read_as=inv.identity.user if inv.identity is not None else "",
                duration_ms=int(seconds * 1000),
                outcome=outcome,
                findings=report.codes() if report else [],
                skipped=len(report.skipped) if report else 0,
            )

    async def _diagnose(self, inv: Invocation, req: SlashRequest) -> Report:
        ticket = self._slots.reserve()  # before any await: the queue keeps arrival order
        try:
            progress = B.render_progress(target_words(inv), req.user_id, req.text)
            shown = progress
            if ticket.position is not None:
                shown = B.render_progress(target_words(inv), req.user_id, req.text, queued=ticket.position)
            parent_ts = await self._post(req.channel_id, shown)
            if parent_ts is None:
                await self._ephemeral(req, shown.text)
            try:
                await ticket.granted()
            except asyncio.CancelledError:  # shutdown while queued: say so, not "queued" forever
                if parent_ts:
                    await self._update(req.channel_id, parent_ts, B.render_progress_failed(shown, NOT_STARTED))
                raise
            if shown is not progress and parent_ts:
                await self._update(req.channel_id, parent_ts, progress)
            return await self._diagnose_and_post(inv, req, progress, parent_ts)
        finally:
            ticket.release()

    async def _diagnose_and_post(
        self, inv: Invocation, req: SlashRequest, progress: B.Rendered, parent_ts: str | None
    ) -> Report:
        try:
            report = await self._service.run(inv)
        except GpubotError as exc:
            if parent_ts:
                failed = B.render_progress_failed(progress, exc.user_message)
                await self._update(req.channel_id, parent_ts, failed)
            raise
        except Exception:
            if parent_ts:
                failed = B.render_progress_failed(progress, "internal error; see the bot's logs")
                await self._update(req.channel_id, parent_ts, failed)
            raise
        offers = await self._offers_for(report, inv, req)
        # Block Kit building walks every finding and its evidence: a worker thread, so a large
        # report does not hold the event loop (and every ack behind it)
        rendered, details, summary = await asyncio.to_thread(_render_all, report, offers)
        if parent_ts is None:
            await self._webhook(req, rendered, response_type="in_channel")
            for page in details[: MAX_EPHEMERAL_PAGES - 1]:
                await self._webhook(req, page, response_type="in_channel")
            return report
        report_ts = await self._post(req.channel_id, rendered, thread_ts=parent_ts)
        if report_ts is None:
            # Slack refused the thread reply: the asker still gets the answer
            await self._webhook(req, rendered, response_type="in_channel")
        elif offers:
            await self._offers_posted(req.channel_id, report_ts, parent_ts, rendered)
        for page in details[:MAX_DETAIL_MESSAGES]:
            await self._post(req.channel_id, page, thread_ts=parent_ts)
        if not await self._update(req.channel_id, parent_ts, summary):
            await self._ephemeral(req, "Slack did not accept the update of the \"diagnosing…\" message; "
                                       "the answer is " + ("in its thread." if report_ts else "above."))
        if rendered.truncated or len(details) > MAX_DETAIL_MESSAGES:
            await self._attach(req.channel_id, parent_ts, report)
        if report.command == "node-status" and len(report.nodes) > PICTURE_MIN_NODES:
            await self._attach_picture(req.channel_id, parent_ts, report)
        return report

    async def _attach_picture(self, channel: str, thread_ts: str, report: Report) -> None:
        """node-status over many nodes: the cards by node and state as a PNG in the thread."""
        try:
            png = await asyncio.to_thread(render_node_picture, report)
        except GpubotError as exc:  # matplotlib not installed: the table still stands
            log_event(log, "no node picture", level=logging.WARNING, reason=exc.user_message)
            return
        try:
            await self._client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                file=png,
                filename="gpubot-node-status.png",
                title=f"GPU cards by node: {len(report.nodes)} nodes",
            )
        except SLACK_FAILURES as exc:
            log_event(log, "slack upload failed", level=logging.WARNING, channel=channel, error=failure_text(exc))

    async def _diagnose_privately(self, inv: Invocation, req: SlashRequest) -> Report:
        """``--private`` (or a private channel): every message goes to the asker alone through
        ``response_url``, nothing is posted in the channel, and no fix gets a button (a button in
        a message only one person sees could not show its outcome to anyone else)."""
        ticket = self._slots.reserve()
        try:
            progress = B.render_progress(target_words(inv), req.user_id, req.text, queued=ticket.position)
            await self._ephemeral(req, progress.text)
            await ticket.granted()
            report = await self._service.run(inv)
            rendered, details = await asyncio.to_thread(_render_private, report)
            await self._webhook(req, rendered, response_type="ephemeral")
            for page in details[: MAX_EPHEMERAL_PAGES - 2]:
                await self._webhook(req, page, response_type="ephemeral")
            return report
        finally:
            ticket.release()

    async def _offers_for(self, report: Report, inv: Invocation, req: SlashRequest) -> B.Offers | None:
        if self._offers is None:
            return None
        ctx = OfferContext(req.user_id, req.channel_id, req.team_id, report.cluster or inv.cluster, inv)
        buttons: dict[FixKey, OfferButton] = {}
        for group in group_findings(report.findings):
            for fix in group.fixes[: B.MAX_BUTTONS_PER_GROUP]:
                offered = await self._offers.offer_remediation(report, fix.finding, fix.remediation, ctx)
                if offered is not None:
                    buttons[fix.key] = offered
        return buttons

    async def _offers_posted(self, channel: str, ts: str, thread_ts: str, rendered: B.Rendered) -> None:
        """Tell the offers hook where its buttons landed (for later edits and expiry)."""
        shown = tuple(offer_ids_in(rendered.blocks))
        if self._offers is None or not shown:
            return
        try:
            await self._offers.offers_posted(PostedOffers(channel, ts, thread_ts, rendered.blocks, shown))
        except Exception:  # noqa: BLE001 - the answer is posted; a bookkeeping failure must not hide it
            log.exception("offers_posted failed", extra={"channel": channel})

    async def _answer_text(self, report: Report, req: SlashRequest) -> None:
        topic = str(report.target.get("topic", ""))
        title = "gpubot help" if report.command == "help" else f"runbook {topic}".strip()
        pages = B.paginate_text(report.text or "(nothing to show)", title=title)
        for page in pages[:MAX_EPHEMERAL_PAGES]:
            await self._webhook(req, page, response_type="ephemeral")
        if len(pages) > MAX_EPHEMERAL_PAGES:
            await self._ephemeral(req, "The rest did not fit; `gpubot runbook` in a terminal shows it all.")

    async def _post(self, channel: str, msg: B.Rendered, *, thread_ts: str | None = None) -> str | None:
        """chat.postMessage; ``None`` when the bot may not post there (then ``response_url`` is used)."""
        try:
            kwargs: dict[str, Any] = {"channel": channel, "text": msg.text, "blocks": msg.blocks}
            if thread_ts:
                kwargs["thread_ts"] = thread_ts
            resp = await self._client.chat_postMessage(**kwargs)
            return str(resp.get("ts") or "") or None
        except SLACK_FAILURES as exc:
            self._failed("chat.postMessage", channel, exc)
            return None

    async def _update(self, channel: str, ts: str, msg: B.Rendered) -> bool:
        try:
            await self._client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
        except SLACK_FAILURES as exc:
            self._failed("chat.update", channel, exc)
            return False
        return True

    def _failed(self, method: str, channel: str, exc: BaseException) -> None:
        self._metrics.slack_failures.labels(method=method).inc()
        log_event(log, "slack call failed", level=logging.WARNING, method=method, channel=channel,
                  error=failure_text(exc))

    async def _attach(self, channel: str, thread_ts: str, report: Report) -> None:
        name = _FILE_UNSAFE.sub("-", f"gpubot-{report.command}-{report.target.get('name', 'report')}")[:80]
        try:
            content = await asyncio.to_thread(full_text, report)
            await self._client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                content=content,
                filename=name + ".txt",
                title="Full report",
            )
        except SLACK_FAILURES as exc:
            self._failed("files.upload", channel, exc)

    async def _webhook(self, req: SlashRequest, msg: B.Rendered, *, response_type: str) -> None:
        if not req.response_url:
            return
        hook = response_hook(req.response_url, self._client)
        try:
            resp = await hook.send(
                text=msg.text, blocks=msg.blocks, response_type=response_type, replace_original=False
            )
        except SLACK_FAILURES as exc:
            self._failed("response_url", req.channel_id, exc)
            return
        if resp.status_code != 200:
            self._metrics.slack_failures.labels(method="response_url").inc()
            log_event(log, "response_url failed", level=logging.WARNING, status=resp.status_code)

    async def _ephemeral(self, req: SlashRequest, text: str) -> None:
        msg = B.Rendered(blocks=[B.section(L.escape_mrkdwn(text))], text=L.fallback(text))
        await self._webhook(req, msg, response_type="ephemeral")



def _render_all(report: Report, offers: B.Offers | None) -> tuple[B.Rendered, list[B.Rendered], B.Rendered]:
    """Everything a channel answer posts, built in one worker-thread hop."""
    return B.render_report(report, offers=offers), B.render_details(report), B.render_summary(report, in_thread=True)


def _render_private(report: Report) -> tuple[B.Rendered, list[B.Rendered]]:
    return B.render_report(report, private=True), B.render_details(report)
