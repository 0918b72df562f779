"""The remediation service: offer → approver policy → atomic claim → precondition re-probe → run → audit.

``RemediationService`` builds the ``ConfirmFlow`` from settings (SQLite state, approver policy,
expiry) and binds it to the registered actions: ``offer`` turns a remediation a diagnosis offers
into a pending record whose id a button (or the CLI) carries; ``click`` turns a click into at most
one run: approver check, atomic claim, the action's precondition re-probe, the run, the audit.
A click by someone who may not approve, on an offer others may, becomes an approval request
(``ClickOutcome.status == "approval_requested"``, naming who may approve); ``deny`` lets an approver
turn an offer down. ``sweep_expired`` expires offers nobody clicked and ``recover`` marks runs cut
off by a restart.
The cluster clients come from the caller (``ClusterClients``); this service opens none.

It knows no chat system: the Slack view (``bot.slack.remediation``) words and edits the messages.
It must never run an action except through ``ConfirmFlow.on_click``, and never put a traceback or
user-typed text into the audit trail.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from typing import Protocol

from kubernetes.client import ApiClient

from bot.actions import ActionContext, get_action
from bot.errors import GpubotError
from bot.probes.kube import KubeReads
from bot.remediation.flow import ClickOutcome, ConfirmFlow, RunOutcome
from bot.remediation.policy import ApproverPolicy, Approvers
from bot.remediation.sqlite_store import open_state
from bot.remediation.store import PendingAction
from bot.settings import Settings

log = logging.getLogger("gpubot.remediation")

OnRunning = Callable[[PendingAction], Awaitable[None]]


class ClusterClients(Protocol):
    """The per-cluster Kubernetes clients the caller already holds (``bot.clients.KubeClients``).

    Remediation borrows them for each run and never closes them; it keeps no clients of its own.
    """

    def reads_for(self, cluster_name: str) -> KubeReads:
        """Reads straight from the API server (never a cache: preconditions re-probe through it)."""
        ...

    def api_client_for(self, cluster_name: str) -> ApiClient:
        """The API connection the actions write through."""
        ...


class RemediationService:
    """Offers and clicks for one bot process; several processes may share the SQLite file."""

    def __init__(
        self, settings: Settings, clients: ClusterClients, *, policy: ApproverPolicy | None = None
    ) -> None:
        self.settings = settings
        self.clients = clients
        store, audit = open_state(settings.state_path)
        if policy is None:
            policy = ApproverPolicy(settings.approvers, settings.two_person_rule)
        self.flow = ConfirmFlow(store, audit, policy, ttl_s=settings.action_ttl_s)
        #: user-group ids named anywhere in the approver lists (``S…``): a view that knows its
        #: chat system's groups looks the clicker up in these, and only these
        self.group_approvers = sorted(
            {i for ids in settings.approvers.values() for i in ids if i.startswith("S")}
        )

    # -- start-up -----------------------------------------------------------------------------

    async def recover(self) -> list[PendingAction]:
        """Mark records cut off by a restart as interrupted (never re-run); return them."""
        return await asyncio.to_thread(self.flow.recover)

    # -- offering -----------------------------------------------------------------------------

    async def offer(
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
        return await asyncio.to_thread(
            self.flow.offer, action, checked, cluster_name, requested_by, channel, finding_code
        )

    def approvers_of(self, action: str) -> Approvers:
        """Who may approve ``action``; empty when nobody may (a view then shows no button)."""
        return self.flow.policy.approvers_of(action)

    @staticmethod
    def blast_radius(action: str) -> str:
        """The action's own hazards in one line (empty for an unknown action)."""
        try:
            return get_action(action).blast_radius
        except GpubotError:
            return ""

    async def locate(
        self, offer_ids: Iterable[str], *, channel: str, message_ts: str, thread_ts: str | None
    ) -> None:
        """Remember which message carries these offers, for the result and the expiry sweep."""

        def record_all() -> None:
            for offer_id in offer_ids:
                self.flow.store.set_message(offer_id, channel=channel, message_ts=message_ts, thread_ts=thread_ts)

        await asyncio.to_thread(record_all)

    async def sweep_expired(self) -> list[PendingAction]:
        """Expire every overdue offer (each expiry audited); return them for the view to update."""
        return await asyncio.to_thread(self.flow.expire_overdue)

    # -- running ------------------------------------------------------------------------------

    def context(
        self, action: str, params: Mapping[str, str], *, cluster: str, finding_code: str | None = None
    ) -> ActionContext:
        """A fresh action context on ``cluster``, on the caller's clients of that cluster."""
        config = self.settings.cluster(cluster or None)
        return ActionContext(
            action=action,
            params=dict(params),
            settings=self.settings,
            cluster=config,
            kube=self.clients.reads_for(config.name),
            api=self.clients.api_client_for(config.name),
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
        on_running: OnRunning | None = None,
    ) -> ClickOutcome:
        """One click through ``ConfirmFlow``: check, claim, re-check the precondition, run.

        ``on_running`` is told once the click has won the claim and the precondition holds,
        just before the action starts (the view says "running"); its failure never stops the run.
        """
        dry = self.settings.dry_run if dry_run is None else dry_run
        contexts: dict[str, ActionContext] = {}

        def ctx_for(record: PendingAction) -> ActionContext:
            if record.id not in contexts:
                ctx = self.context(
                    record.action, record.params, cluster=record.cluster, finding_code=record.finding_code
                )
                ctx.on_step = partial(self.flow.record_step, record)
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

        return await self.flow.on_click(action_id, user_id, user_groups, precondition=precondition, run=run)

    async def deny(self, action_id: str, user_id: str, user_groups: Iterable[str] = ()) -> ClickOutcome:
        """An approver turns the offer down: it can never run (audited as ``deny``)."""
        return await self.flow.on_deny(action_id, user_id, user_groups)
