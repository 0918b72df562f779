"""``node.cordon`` / ``node.uncordon``: mark one node unschedulable or schedulable again.

A cordon only stops new pods landing on the node; running pods stay. The precondition checks the
node exists and is not already in the wanted state, so a stale button does nothing.

Must never drain (evict) pods: that is a different, larger action gpubot does not offer.
"""

from __future__ import annotations

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.nodeops import is_cordoned, read_node, ready_status
from bot.actions.steps import StepFailed, StepLog
from bot.names import validate_name


class _SetSchedulable(BaseAction):
    unschedulable = True
    required = {"node": lambda v: validate_name(v, what="node name")}
    target_param = "node"

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        node = ctx.param("node")
        obj = await read_node(ctx, node)
        if is_cordoned(obj) == self.unschedulable:
            return False, f"node {node} is already {'cordoned' if self.unschedulable else 'schedulable'}"
        now = "schedulable" if self.unschedulable else "cordoned"
        return True, f"node {node} is {now} (Ready={ready_status(obj)})"

    async def plan(self, ctx: ActionContext) -> list[str]:
        verb = "cordon" if self.unschedulable else "uncordon"
        return [
            f"{verb} node {ctx.param('node')}: PATCH spec.unschedulable={str(self.unschedulable).lower()}"
        ]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        node = ctx.param("node")
        verb = "cordon" if self.unschedulable else "uncordon"
        log = StepLog(ctx)
        try:
            await log.run(f"{verb} node {node}", ctx.writer.set_unschedulable(node, self.unschedulable))
        except StepFailed as failed:
            return ActionOutcome(
                False,
                f"{verb} of {node} failed: {failed.step.detail}",
                log.steps,
                state=f"node {node}: unchanged",
            )
        state = f"node {node}: {'CORDONED' if self.unschedulable else 'schedulable'}"
        return ActionOutcome(True, f"node {node} {verb}ed.", log.steps, state=state)


@action("node.cordon")
class CordonNode(_SetSchedulable):
    blast_radius = (
        "Marks the node unschedulable: no new pod lands on it; pods already there keep running. "
        "Nothing is evicted. Undo with node.uncordon."
    )
    done = "the node shows SchedulingDisabled and its running pods are untouched"
    unschedulable = True


@action("node.uncordon")
class UncordonNode(_SetSchedulable):
    blast_radius = (
        "Marks the node schedulable again: the scheduler may place new pods on it at once. "
        "Check that the node is Ready and its GPUs are healthy first."
    )
    done = "the node takes new pods again"
    unschedulable = False
