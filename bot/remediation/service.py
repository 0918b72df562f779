"""The remediation service: offer → approver policy → atomic claim → precondition re-probe → run → audit.

``RemediationService`` builds the ``ConfirmFlow`` from settings (SQLite state, approver policy,
expiry) and binds it to the registered actions: ``offer`` turns a remediation a diagnosis offers
into a pending record whose id a button (or the CLI) carries; ``click`` turns a click into at most
one run: approver check, atomic claim, the action's precondition re-probe, the run, the audit.
A click by someone who may not approve, on an offer others may, becomes an approval request
(``ClickOutcome.status == "approval_requested"``, naming who may approve); ``deny`` lets an approver
turn an offer down. ``sweep_expired`` expires offers nobody clicked; ``recover`` takes over runs
whose process stopped renewing them (a restart, a lost replica, a result the state file could not
take) and has their action restore what they changed, from the state each step wrote first.
``max_action_s`` is how long a run may take, so shutdown can wait for it. The cluster clients come
from the caller (``ClusterClients``); this service opens none.

It knows no chat system: the Slack view (``bot.slack.remediation``) words and edits the messages.
It must never run an action except through ``ConfirmFlow.on_click``, and never put a traceback or
user-typed text into the audit trail.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from kubernetes.client import ApiClient

from bot.actions import ACTIONS, ActionContext, get_action
from bot.actions.base import ActionOutcome
from bot.actions.node_procedure import NodeProcedure
from bot.errors import GpubotError, StateStoreError, error_text
from bot.probes.kube import KubeReads
from bot.remediation.flow import ClickOutcome, ConfirmFlow, RunOutcome, StepResult
from bot.remediation.journal import RunJournal
from bot.remediation.policy import ApproverPolicy, Approvers
from bot.settings import Settings
from bot.state.contracts import AuditLog, PendingStore
from bot.state.kube_locks import ClusterNodeGuard
from bot.state.opening import open_sqlite
from bot.state.records import PendingAction

log = logging.getLogger("gpubot.remediation")

OnRunning = Callable[[PendingAction], Awaitable[None]]


class ClusterClients(Protocol):
    """The per-cluster Kubernetes clients the caller already holds (``bot.probes.clients.KubeClients``).

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
        self,
        settings: Settings,
        clients: ClusterClients,
        *,
        policy: ApproverPolicy | None = None,
        state: tuple[PendingStore, AuditLog] | None = None,
    ) -> None:
        """``state``: the store and audit log to use (``state: kubernetes``, built by the
        wiring); None opens the SQLite file at ``settings.state_path``."""
        self.settings = settings
        self.clients = clients
        store, audit = state if state is not None else open_sqlite(settings.state_path).actions()
        if policy is None:
            policy = ApproverPolicy(settings.approvers, settings.two_person_rule)
        #: the per-node lock on each node's cluster, whatever the state backend (a terminal too)
        self.guard = ClusterNodeGuard(settings, clients)
        self.flow = ConfirmFlow(
            store, audit, policy, ttl_s=settings.action_ttl_s, lease_s=settings.action_lease_s, guard=self.guard
        )
        self.flow.restorer = self._restore
        #: user-group ids named anywhere in the approver lists (``S…``): a view that knows its
        #: chat system's groups looks the clicker up in these, and only these
        self.group_approvers = sorted({i for ids in settings.approvers.values() for i in ids if i.startswith("S")})

    # -- start-up -----------------------------------------------------------------------------

    async def recover(self) -> list[PendingAction]:
        """Restore and record as interrupted every run nobody renews any more; return them.

        At start-up that is what a restart cut off; later, a lost replica's runs (after the lease)
        and this process's runs whose result could not be written. Never re-runs an action.
        """
        return await self.flow.recover(self._restore)

    async def _restore(self, record: PendingAction, journal: RunJournal) -> tuple[str, list[str]]:
        try:
            action = get_action(record.action)
            ctx = self.context(record.action, record.params, cluster=record.cluster, finding_code=record.finding_code)
            ctx.params = action.check_params(record.params)
            ctx.action_id, ctx.journal = record.id, journal
            if isinstance(action, NodeProcedure):
                outcome = await action.recover(ctx, dict(record.progress))
                return outcome.summary_line(), outcome.step_lines()
        except Exception as exc:  # noqa: BLE001 - a recovery failure is reported, never raised
            if not isinstance(exc, GpubotError):
                log.exception("restore of %s (%s) raised", record.action, record.id)
            return f"could not restore ({error_text(exc)}); check the target's state by hand", []
        if record.progress.get("step"):
            return "not re-run; its steps may have half happened, check the target's state by hand", []
        return "it stopped before its first step; nothing was changed", []

    @property
    def max_action_s(self) -> float:
        """The longest any action may take, restore included: shutdown waits this long for a run."""
        return max(a.max_duration_s(self.settings) for a in ACTIONS.values())

    @property
    def running(self) -> int:
        """How many actions this process is running (or restoring) now."""
        return self.flow.running

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
        try:
            return await asyncio.to_thread(
                self.flow.offer, action, checked, cluster_name, requested_by, channel, finding_code
            )
        except StateStoreError as exc:
            # an offer the audit trail cannot record is not shown as a button
            log.warning("not offering %s: %s", action, exc.user_message)
            return None

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

    async def locate(self, offer_ids: Iterable[str], *, channel: str, message_ts: str, thread_ts: str | None) -> None:
        """Remember which message carries these offers, for the result and the expiry sweep."""

        def record_all() -> None:
            for offer_id in offer_ids:
                self.flow.store.set_message(offer_id, channel=channel, message_ts=message_ts, thread_ts=thread_ts)

        await asyncio.to_thread(record_all)

    async def acting_on(self, cluster: str, nodes: Iterable[str]) -> dict[str, str]:
        """Which of ``nodes`` a gpubot action holds now (its Lease on the cluster renewed), each
        with what acts on it: the watch does not report a node gpubot itself is restarting."""
        out: dict[str, str] = {}
        for node in nodes:
            try:
                run = await asyncio.to_thread(self.guard.held, cluster, node)
            except GpubotError as exc:
                log.debug("lock of node %s not read: %s", node, exc.user_message)
                continue
            if run is not None:
                out[node] = f"{run.action}, started by {run.approved_by or 'unknown'}"
        return out

    async def keep_blocks(self, record: PendingAction, blocks: Sequence[Mapping[str, Any]]) -> None:
        """Keep the blocks of the message showing this run's status line in the shared state
        (not only in this process), so whichever process ends the run can edit that line: in the
        store, and for a node action on its node's Lease too, where a process with another state
        finds the run when it restores it."""
        text = json.dumps(list(blocks))
        writes = [partial(self.flow.store.set_blocks, record.id, text)]
        if record.lock_key:
            writes.append(partial(self.guard.keep_blocks, record, text))
        for write in writes:
            try:
                await asyncio.to_thread(write)
            except StateStoreError as exc:
                log.warning("message of %s not kept for a later edit: %s", record.id, exc.user_message)

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
                ctx.action_id = record.id
                contexts[record.id] = ctx
            return contexts[record.id]

        async def precondition(record: PendingAction) -> tuple[bool, str]:
            action = get_action(record.action)
            ctx = ctx_for(record)
            ctx.params = action.check_params(record.params)
            return await action.precondition(ctx)

        async def run(record: PendingAction, journal: RunJournal) -> RunOutcome:
            if on_running is not None:
                try:
                    await on_running(record)
                except Exception:  # noqa: BLE001 - a failed status message must not stop the action
                    log.exception("could not announce the run of %s", record.id)
            ctx = ctx_for(record)
            if not dry:
                ctx.journal = journal  # a dry run changes nothing: its plan is audited at the end
            return run_outcome(await get_action(record.action).run(ctx, dry_run=dry))

        return await self.flow.on_click(action_id, user_id, user_groups, precondition=precondition, run=run)

    async def deny(self, action_id: str, user_id: str, user_groups: Iterable[str] = ()) -> ClickOutcome:
        """An approver turns the offer down: it can never run (audited as ``deny``)."""
        return await self.flow.on_deny(action_id, user_id, user_groups)


def run_outcome(outcome: ActionOutcome) -> RunOutcome:
    """The flow's view of an action's outcome: each step with its real status."""
    steps = [StepResult(s.line(), s.status, audited=s.audited) for s in outcome.steps]
    return RunOutcome(outcome.ok, outcome.summary_line(), steps)
