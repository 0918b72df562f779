"""The cordon → kubelet work → wait Ready → uncordon procedure that node actions share.

``kubelet.restart`` and ``checkpoint.clear`` differ only in the kubelet steps in the middle and in
how they verify the result; the safety frame around them is written once, here: cordon only a
schedulable node, write what the run has changed before every step, and on *any* way out that is
not success — a failed step, a lost connection, a step whose record could not be written, a
cancellation (shutdown, a handler cut off) — run the restore to its end, shielded from further
cancellation, and say the node's state. ``recover`` does the same restore for a run a previous
process left unfinished, from the state it wrote.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from typing import Any

from bot.actions.actuator import ActuatorUnavailable
from bot.actions.base import ActionContext, ActionOutcome, BaseAction
from bot.actions.node_exec import NodeShell
from bot.actions.nodeops import (
    MIN_SYSTEMCTL_TIMEOUT_S,
    NodeRun,
    cordon_if_needed,
    is_cordoned,
    node_state,
    node_via,
    read_node,
    restore,
    shell_for,
    uncordon_if_ours,
    wait_ready,
)
from bot.actions.steps import StepFailed, StepLog
from bot.aio import run_to_end
from bot.errors import GpubotError, error_text
from bot.settings import Settings

log_errors = logging.getLogger(__name__)


class NodeProcedure(BaseAction):
    """A node action framed by cordon/uncordon; subclasses supply the re-check, the middle and the check."""

    @abc.abstractmethod
    async def recheck(self, ctx: ActionContext, shell: NodeShell, node: str) -> tuple[bool, str]:
        """The precondition's re-probe of the node, on an open shell."""

    @abc.abstractmethod
    def middle_plan(self, ctx: ActionContext, node: str) -> list[str]:
        """The plan lines of the kubelet steps between cordon and wait-for-Ready."""

    @abc.abstractmethod
    async def middle(self, ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell, node: str) -> None:
        """Run the kubelet steps; mark in ``run`` what may change *before* each step sends it."""

    async def verify(self, ctx: ActionContext, log: StepLog, shell: NodeShell, node: str) -> tuple[bool, str]:
        """After a successful run: (ok, summary)."""
        return True, f"{self.name} done on {node}."

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        """Re-probe the node; a node whose actuator cannot run anything is refused here, before
        any step, with why (the audit's refusal reason)."""
        node = ctx.param("node")
        obj = await read_node(ctx, node)
        ctx.facts["cordoned"] = is_cordoned(obj)
        try:
            async with shell_for(ctx, node, obj) as shell:
                return await self.recheck(ctx, shell, node)
        except ActuatorUnavailable as exc:
            return False, exc.user_message

    @staticmethod
    def step(ctx: ActionContext, node: str, command: str) -> str:
        """A node step's line: ``ssh NODE: COMMAND`` or ``actuator NODE: COMMAND``."""
        return f"{node_via(ctx)} {node}: {command}"

    def max_duration_s(self, settings: Settings) -> float:
        """Two Ready waits (the run's, the restore's) and every SSH and API call at its deadline."""
        ssh = max(settings.ssh_deadline_s, MIN_SYSTEMCTL_TIMEOUT_S)
        return 2 * settings.node_ready_timeout_s + 10 * ssh + 8 * settings.api_timeout_s

    async def plan(self, ctx: ActionContext) -> list[str]:
        node = ctx.param("node")
        if "cordoned" not in ctx.facts:
            ctx.facts["cordoned"] = is_cordoned(await read_node(ctx, node))
        cordoned = ctx.facts["cordoned"]
        return [
            f"cordon node {node}: PATCH spec.unschedulable=true"
            if not cordoned
            else f"leave node {node} cordoned (it already is)",
            *self.middle_plan(ctx, node),
            f"wait until kubelet is active and node {node} is Ready with a heartbeat newer than the restart "
            f"(at most {ctx.settings.node_ready_timeout_s:g}s)",
            f"uncordon node {node}: PATCH spec.unschedulable=false" if not cordoned else f"leave node {node} cordoned",
        ]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        node = ctx.param("node")
        log = StepLog(ctx)
        run = NodeRun(node)
        obj = await read_node(ctx, node)
        shell = shell_for(ctx, node, obj)
        try:
            await shell.__aenter__()
        except GpubotError as exc:
            # not even connected: nothing was changed
            state = node_state(run, cordoned=is_cordoned(obj), kubelet="unknown", ready="unknown")
            return ActionOutcome(False, f"{self.name} on {node}: {exc.user_message}", log.steps, state=state)
        try:
            return await self._steps(ctx, log, run, shell, node)
        finally:
            await run_to_end(shell.close())

    async def _steps(
        self, ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell, node: str
    ) -> ActionOutcome:
        stopped_at = ""
        why = ""
        try:
            await cordon_if_needed(ctx, log, run, await read_node(ctx, node))
            await self.middle(ctx, log, run, shell, node)
            await log.run(
                f"wait for node {node} Ready", wait_ready(ctx, shell, node, since=run.before_start),
                progress=run.progress(),
            )
            await uncordon_if_ours(ctx, log, run)
            ok, summary = await self.verify(ctx, log, shell, node)
            kubelet = await shell.kubelet_state()
            state = node_state(run, cordoned=is_cordoned(await read_node(ctx, node)), kubelet=kubelet, ready="True")
            return ActionOutcome(ok, summary, log.steps, state=state)
        except StepFailed as failed:
            stopped_at, why = failed.step.what, failed.step.detail
        except asyncio.CancelledError:
            # asked to stop (shutdown, a cut-off handler): restore now, then report; the
            # canceller waits for this outcome
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            stopped_at, why = (log.steps[-1].what if log.steps else "start"), "cancelled"
        except GpubotError as exc:
            # a read between steps failed (the API, the connection while verifying)
            stopped_at, why = (log.steps[-1].what if log.steps else "start"), error_text(exc)
        except Exception as exc:  # noqa: BLE001 - a bug must still end with the node restored
            log_errors.exception("%s on %s raised", self.name, node)
            stopped_at, why = (log.steps[-1].what if log.steps else "start"), error_text(exc)
        state = await run_to_end(restore(ctx, log, run, shell))
        verb = "was cancelled at" if why == "cancelled" else "stopped at"
        detail = "" if why == "cancelled" else f": {why}"
        return ActionOutcome(False, f"{self.name} on {node} {verb} '{stopped_at}'{detail}.", log.steps, state=state)

    async def recover(self, ctx: ActionContext, progress: dict[str, Any]) -> ActionOutcome:
        """Restore what an unfinished run recorded it had changed (a previous process's run)."""
        node = ctx.param("node")
        if not progress.get("step"):
            return ActionOutcome(False, "it stopped before its first step; nothing was changed", [])
        run = NodeRun.from_progress(node, progress)
        log = StepLog(ctx)
        try:
            obj = await read_node(ctx, node)
            async with shell_for(ctx, node, obj) as shell:
                state = await run_to_end(restore(ctx, log, run, shell))
        except GpubotError as exc:
            state = node_state(run, cordoned=run.we_cordoned, kubelet="unknown", ready="unknown")
            return ActionOutcome(
                False, f"could not restore ({exc.user_message}); check the node by hand", log.steps, state=state
            )
        return ActionOutcome(False, f"restored: {state}", log.steps, state=state)
