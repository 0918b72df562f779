"""The cordon → kubelet work → wait Ready → uncordon procedure that node actions share.

``kubelet.restart`` and ``checkpoint.clear`` differ only in the kubelet steps in the middle and in
how they verify the result; the safety frame around them (cordon only a schedulable node, restore
after a failed step, uncordon only what we cordoned and only once Ready, say the node's state)
is written once, here.
"""

from __future__ import annotations

import abc

from bot.actions.base import ActionContext, ActionOutcome, BaseAction
from bot.actions.node_exec import NodeShell
from bot.actions.nodeops import (
    NodeRun,
    cordon_if_needed,
    is_cordoned,
    node_state,
    read_node,
    restore,
    shell_for,
    uncordon_if_ours,
    wait_ready,
)
from bot.actions.steps import StepFailed, StepLog
from bot.errors import GpubotError


class NodeProcedure(BaseAction):
    """A node action framed by cordon/uncordon; subclasses supply the middle and the check."""

    @abc.abstractmethod
    def middle_plan(self, ctx: ActionContext, node: str) -> list[str]:
        """The plan lines of the kubelet steps between cordon and wait-for-Ready."""

    @abc.abstractmethod
    async def middle(self, ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell, node: str) -> None:
        """Run the kubelet steps; set ``run.kubelet_down`` while the kubelet may be stopped."""

    async def verify(self, ctx: ActionContext, log: StepLog, shell: NodeShell, node: str) -> tuple[bool, str]:
        """After a successful run: (ok, summary)."""
        return True, f"{self.name} done on {node}."

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
            f"wait until kubelet is active and node {node} is Ready (at most {ctx.settings.node_ready_timeout_s:g}s)",
            f"uncordon node {node}: PATCH spec.unschedulable=false" if not cordoned else f"leave node {node} cordoned",
        ]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        node = ctx.param("node")
        log = StepLog(ctx)
        run = NodeRun(node)
        obj = await read_node(ctx, node)
        shell = shell_for(ctx, node, obj)
        try:
            async with shell:
                try:
                    await cordon_if_needed(ctx, log, run, obj)
                    await self.middle(ctx, log, run, shell, node)
                    await log.run(f"wait for node {node} Ready", wait_ready(ctx, shell, node))
                    await uncordon_if_ours(ctx, log, run)
                except StepFailed as failed:
                    state = await restore(ctx, log, run, shell)
                    return ActionOutcome(
                        False,
                        f"{self.name} on {node} stopped at '{failed.step.what}': {failed.step.detail}.",
                        log.steps,
                        state=state,
                    )
                ok, summary = await self.verify(ctx, log, shell, node)
                kubelet = await shell.kubelet_state()
        except GpubotError as exc:
            # the connection itself failed (before any step, or while verifying)
            state = node_state(run, cordoned=run.we_cordoned, kubelet="unknown", ready="unknown")
            return ActionOutcome(False, f"{self.name} on {node}: {exc.user_message}", log.steps, state=state)
        state = node_state(run, cordoned=is_cordoned(await read_node(ctx, node)), kubelet=kubelet, ready="True")
        return ActionOutcome(ok, summary, log.steps, state=state)
