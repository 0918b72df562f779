"""Glue between the views (Slack, CLI, demo) and the actions, through the confirmation flow.

``Remediator`` builds the ``ConfirmFlow`` from settings (SQLite state, approver policy, expiry),
turns each remediation a diagnosis offers into a pending record whose id the button carries
(``offer_remediation``, the Slack layer's ``RemediationOffers``), and turns a click into at most
one run (``on_remediate``, the Slack layer's click hook): approver check (Slack user groups are
looked up only when group approvers are configured), atomic claim, the action's precondition
re-probe, the run, and the messages (``remediation_slack``): the clicked button alone becomes
"approved by <@U…> at …, running", then the outcome, and the step details go into the report's
thread. ``offers_posted`` records where each offer's message is, so ``sweep_expired`` (run
periodically by ``serve``) can mark offers nobody clicked as expired in place. ``cli_act`` is the
same path for ``gpubot act``, with a typed confirmation in place of the button.

This module must never run an action except through ``ConfirmFlow.on_click``, and never put a
traceback, a token or user-typed text into a Slack message or the audit trail.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.actions import ActionContext, get_action
from bot.actions.kube_writes import KubeWriter
from bot.confirm import ApproverPolicy, ClickOutcome, ConfirmFlow, PendingAction, RunOutcome, open_state
from bot.errors import GpubotError
from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.remediation_slack import OfferMessenger, expired_text, final_text, running_text, slack_error, steps_text
from bot.report import Finding, Remediation, Report
from bot.settings import Settings
from bot.slack.hooks import PostedOffers

log = logging.getLogger("gpubot.remediation")

_CLI_USER = re.compile(r"[^A-Za-z0-9._@-]")


class Remediator:
    """Offers and clicks for one bot process; several processes may share the SQLite file."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: AsyncWebClient | None = None,
        flow: ConfirmFlow | None = None,
    ) -> None:
        self.settings = settings
        if flow is None:
            store, audit = open_state(settings.state_path)
            policy = ApproverPolicy(settings.approvers, settings.two_person_rule)
            flow = ConfirmFlow(store, audit, policy, ttl_s=settings.action_ttl_s)
        self.flow = flow
        self.client = client
        self.messages = OfferMessenger(client)
        #: user-group ids named anywhere in the approver lists (``S…``)
        self.group_approvers = sorted(
            {i for ids in settings.approvers.values() for i in ids if i.startswith("S")}
        )
        self._clients: dict[str, tuple[KubeReader, KubeWriter]] = {}

    # -- start-up and shutdown ----------------------------------------------------------------

    async def start(self) -> list[PendingAction]:
        """Mark records cut off by a restart as interrupted (never re-run) and say so in Slack."""
        interrupted = await asyncio.to_thread(self.flow.recover)
        for record in interrupted:
            text = (
                f":warning: {record.action} on {record.target or 'the cluster'} was interrupted by a "
                "gpubot restart and was not re-run. Check the target's state by hand."
            )
            if record.channel:
                await self.messages.post(record.channel, text, thread_ts=record.thread_ts or record.message_ts)
        return interrupted

    async def close(self) -> None:
        for reader, writer in self._clients.values():
            reader.close()
            writer.close()
        self._clients.clear()

    # -- offering -----------------------------------------------------------------------------

    def offer(
        self,
        action: str,
        params: Mapping[str, str],
        *,
        cluster: str,
        requested_by: str,
        channel: str = "",
        finding_code: str | None = None,
    ) -> PendingAction | None:
        """A pending record for a valid action and parameters; ``None`` if it cannot be offered."""
        try:
            checked = get_action(action).check_params(params)
            cluster_name = self.settings.cluster(cluster or None).name
        except GpubotError as exc:
            log.info("not offering %s: %s", action, exc.user_message)
            return None
        return self.flow.offer(
            action, checked, cluster_name, requested_by, channel, finding_code
        )

    async def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: Any
    ) -> str | None:
        """``RemediationOffers``: the id the button carries, or ``None`` (listed without a button)."""
        record = await asyncio.to_thread(
            self.offer,
            remediation.action,
            remediation.params,
            cluster=str(getattr(context, "cluster", "") or report.cluster or ""),
            requested_by=str(getattr(context, "user_id", "")),
            channel=str(getattr(context, "channel_id", "")),
            finding_code=finding.code,
        )
        return record.id if record is not None else None

    async def offers_posted(self, posted: PostedOffers) -> None:
        """``OffersPosted``: remember where each offer's button is, for clicks and the expiry sweep."""
        self.messages.remember(posted.channel, posted.message_ts, posted.blocks)

        def record_all() -> None:
            for offer_id in posted.offer_ids:
                self.flow.store.set_message(
                    offer_id, channel=posted.channel, message_ts=posted.message_ts, thread_ts=posted.thread_ts
                )

        await asyncio.to_thread(record_all)

    async def sweep_expired(self) -> list[PendingAction]:
        """Expire overdue offers (audited by the flow) and turn their buttons into "expired" lines.

        ``serve`` calls this every ``offer_sweep_interval_s``; offers of one message change in one
        edit. Offers never posted to a known message (answered through ``response_url``) only
        change state.
        """
        expired = await asyncio.to_thread(self.flow.expire_overdue)
        by_message: dict[tuple[str, str], list[PendingAction]] = {}
        for record in expired:
            if record.channel and record.message_ts:
                by_message.setdefault((record.channel, record.message_ts), []).append(record)
        for (channel, ts), records in by_message.items():
            await self.messages.update_offers(
                channel, ts, [(r.id, expired_text(r)) for r in records], thread_ts=records[0].thread_ts
            )
        return expired

    # -- running ------------------------------------------------------------------------------

    def context(
        self, action: str, params: Mapping[str, str], *, cluster: str, finding_code: str | None = None
    ) -> ActionContext:
        """A fresh action context on ``cluster`` (clients are reused across clicks)."""
        config = self.settings.cluster(cluster or None)
        clients = self._clients.get(config.name)
        if clients is None:
            reader = KubeReader(
                new_api_client(config), page_size=self.settings.page_size, timeout=self.settings.api_timeout_s
            )
            clients = (reader, KubeWriter(new_api_client(config), timeout=self.settings.api_timeout_s))
            self._clients[config.name] = clients
        return ActionContext(
            action=action,
            params=dict(params),
            settings=self.settings,
            cluster=config,
            kube=clients[0],
            writer=clients[1],
            clock=self.flow.clock,
            finding_code=finding_code,
        )

    async def click(
        self,
        action_id: str,
        user_id: str,
        user_groups: Iterable[str] = (),
        *,
        dry_run: bool | None = None,
        on_running: Callable[[PendingAction], Awaitable[None]] | None = None,
    ) -> ClickOutcome:
        """One click through ``ConfirmFlow``: check, claim, re-check the precondition, run."""
        dry = self.settings.dry_run if dry_run is None else dry_run
        contexts: dict[str, ActionContext] = {}

        def ctx_for(record: PendingAction) -> ActionContext:
            if record.id not in contexts:
                ctx = self.context(
                    record.action, record.params, cluster=record.cluster, finding_code=record.finding_code
                )
                ctx.on_step = lambda text: self.flow.record_step(record, text)
                contexts[record.id] = ctx
            return contexts[record.id]

        async def precondition(record: PendingAction) -> tuple[bool, str]:
            action = get_action(record.action)
            ctx = ctx_for(record)
            ctx.params = action.check_params(record.params)
            return await action.precondition(ctx)

        async def run(record: PendingAction) -> RunOutcome:
            if on_running is not None:
                try:
                    await on_running(record)
                except Exception:  # noqa: BLE001 - a failed status message must not stop the action
                    log.exception("could not announce the run of %s", record.id)
            outcome = await get_action(record.action).run(ctx_for(record), dry_run=dry)
            return RunOutcome(outcome.ok, outcome.summary_line(), outcome.step_lines())

        return await self.flow.on_click(
            action_id, user_id, user_groups, precondition=precondition, run=run
        )

    # -- Slack --------------------------------------------------------------------------------

    async def user_groups(self, user_id: str) -> list[str]:
        """The configured approver groups ``user_id`` belongs to (no Slack call if none are configured)."""
        if not self.group_approvers or self.client is None:
            return []
        found = []
        for group in self.group_approvers:
            try:
                resp = await self.client.usergroups_users_list(usergroup=group)
            except SlackApiError as exc:
                log.warning("usergroups.users.list %s failed: %s", group, slack_error(exc))
                continue
            if user_id in (resp.get("users") or []):
                found.append(group)
        return found

    async def on_remediate(
        self,
        action_value: str,
        user_id: str,
        channel: str,
        message_ts: str,
        response_url: str,
        *,
        blocks: Sequence[Mapping[str, Any]] | None = None,
        thread_ts: str | None = None,
    ) -> None:
        """The Slack click hook (``ClickHook``, called after the ack).

        ``blocks`` (the clicked message as Slack sent it) let the clicked button alone be
        replaced; ``thread_ts`` is the message's thread, where the step details go.
        """
        groups = await self.user_groups(user_id)
        thread = thread_ts

        async def announce(record: PendingAction) -> None:
            nonlocal thread
            thread = record.thread_ts or thread_ts
            if message_ts:
                await asyncio.to_thread(
                    self.flow.store.set_message, record.id, channel=channel, message_ts=message_ts, thread_ts=thread
                )
            text = running_text(record, user_id, self.flow.clock(), dry_run=self.settings.dry_run)
            await self.messages.update_offer(
                channel, message_ts, record.id, text, blocks=blocks, thread_ts=thread or message_ts
            )

        outcome = await self.click(action_value, user_id, groups, on_running=announce)
        record = outcome.action
        thread = thread or (record.thread_ts if record else None) or message_ts
        if outcome.updates_offer and record is not None:
            await self.messages.update_offer(
                channel, message_ts, record.id, final_text(outcome, user_id), blocks=blocks, thread_ts=thread
            )
        else:
            await self.messages.ephemeral(response_url, outcome.message)
        if outcome.steps and channel:
            await self.messages.post(channel, steps_text(outcome.steps), thread_ts=thread or None)


def cli_actor(username: str) -> str:
    """``cli:<user>`` with only the characters the approver policy accepts."""
    return "cli:" + (_CLI_USER.sub("_", username)[:64] or "unknown")


async def cli_act(
    settings: Settings,
    action_name: str,
    params: Mapping[str, str],
    *,
    actor: str,
    dry_run: bool,
    assume_yes: bool,
    read_line: Callable[[str], str],
    write: Callable[[str], None],
) -> int:
    """``gpubot act``: plan, typed confirmation, then the same flow and audit as a Slack click.

    The person at the terminal confirms by typing the target's name; they are the requester and
    the approver (the CLI needs cluster credentials already), so the flow's policy for this one
    run names only them and the two-person rule does not apply.
    """
    action = get_action(action_name)
    checked = action.check_params(params)
    store, audit = open_state(settings.state_path)
    policy = ApproverPolicy({action_name: (actor,)}, False)
    flow = ConfirmFlow(store, audit, policy, ttl_s=settings.action_ttl_s)
    rem = Remediator(settings, flow=flow)
    dry = dry_run or settings.dry_run
    target = action.target(checked)
    try:
        ctx = rem.context(action_name, checked, cluster="")
        holds, why = await action.precondition(ctx)
        write(f"{action_name} on {target} (cluster {ctx.cluster.name})")
        write(f"blast radius: {action.blast_radius}")
        write(f"done when: {action.done}")
        write(f"precondition: {'holds' if holds else 'does NOT hold'}: {why}")
        if not holds:
            audit.append("refuse", action=action_name, actor=actor, cluster=ctx.cluster.name,
                         target=target, detail={"reason": f"precondition does not hold: {why}"},
                         outcome="refused")
            return 1
        write("plan:" + "".join(f"\n  {i}. {s}" for i, s in enumerate(await action.plan(ctx), start=1)))
        if not dry and not assume_yes:
            typed = read_line(f"Type the target name ({target}) to proceed: ").strip()
            if typed != target:
                audit.append("refuse", action=action_name, actor=actor, cluster=ctx.cluster.name,
                             target=target, detail={"reason": "typed confirmation did not match"},
                             outcome="refused")
                write("aborted: the typed name did not match; nothing was changed")
                return 1
        record = flow.offer(action_name, checked, ctx.cluster.name, actor)
        outcome = await rem.click(record.id, actor, dry_run=dry)
        for i, step in enumerate(outcome.steps, start=1):
            write(f"  step {i}: {step}")
        write(outcome.message)
        return 0 if outcome.status == "succeeded" else 1
    finally:
        await rem.close()


def run_act(
    settings: Settings,
    action: str,
    params: Mapping[str, str],
    *,
    dry_run: bool,
    assume_yes: bool,
    scenario: str = "",
) -> int:
    """``gpubot act`` from the command line; ``scenario`` runs it on a fresh simulator of that file."""
    actor = cli_actor(getpass.getuser())

    def read_line(prompt: str) -> str:
        try:
            return input(prompt)
        except EOFError:
            return ""

    async def go() -> int:
        if not scenario:
            return await cli_act(settings, action, params, actor=actor, dry_run=dry_run,
                                 assume_yes=assume_yes, read_line=read_line, write=print)
        from bot.sim.cluster import SimCluster

        async with SimCluster.from_file(scenario) as sim:
            sim_settings = sim.settings(
                state_path=settings.state_path, dry_run=settings.dry_run, runbook_dir=settings.runbook_dir,
                node_ready_timeout_s=settings.node_ready_timeout_s, action_ttl_s=settings.action_ttl_s,
            )
            return await cli_act(sim_settings, action, params, actor=actor, dry_run=dry_run,
                                 assume_yes=assume_yes, read_line=read_line, write=print)

    return asyncio.run(go())


async def serve_with_remediation(settings: Settings) -> None:
    """``gpubot serve`` with the remediation buttons wired: offers, clicks, restart recovery."""
    from bot.server import serve

    web = AsyncWebClient(token=settings.slack_bot_token.get() or None, base_url=settings.slack_api_url)
    rem = Remediator(settings, client=web)
    await rem.start()
    try:
        await serve(settings, offers=rem, on_remediate=rem.on_remediate, sweep=rem.sweep_expired)
    finally:
        await rem.close()
