"""``checkpoint.clear``: move the kubelet device-plugin checkpoint aside so zombie allocations go.

Order: cordon (unless already cordoned) → ``systemctl stop kubelet`` → move the checkpoint to a
backup beside it named by the time in nanoseconds and the action id → ``systemctl start kubelet``
(the kubelet writes a fresh one) → wait for Ready with a heartbeat newer than the start →
uncordon only if gpubot cordoned. The kubelet counts as down from *before* the stop is sent, so a
lost answer to the stop still ends with the kubelet started again. The precondition re-probes the node
(over SSH or its actuator) and the pods bound to it: zombie entries must still exist and their pods must still be gone.

Must never delete the checkpoint outright or touch anything but the file and the kubelet unit.
"""

from __future__ import annotations

from bot.actions.base import ActionContext, action
from bot.actions.node_exec import START_KUBELET, STOP_KUBELET, NodeShell, move_checkpoint_command, new_backup_path
from bot.actions.node_heartbeat import read_heartbeat
from bot.actions.node_procedure import NodeProcedure
from bot.actions.nodeops import NodeRun, describe_zombies, read_node, zombie_entries
from bot.actions.steps import StepLog
from bot.names import validate_name

#: stands for the action id in a plan made before the offer exists (``gpubot act`` shows the plan first)
PLAN_ID = "ACTION-ID"


@action("checkpoint.clear")
class ClearCheckpoint(NodeProcedure):
    blast_radius = (
        "Cordons the node and stops kubelet: its pods lose contact with the API for the outage "
        "(containers keep running). The checkpoint is moved to a backup. Risk: kubernetes#116125 "
        "(a pod left Running without its GPU). Try kubelet.restart first."
    )
    done = (
        "the checkpoint no longer lists pods that do not exist, kubelet is active, the node is Ready, "
        "and it is schedulable again if gpubot cordoned it; the old checkpoint is kept as a backup"
    )
    required = {"node": lambda v: validate_name(v, what="node name")}
    target_param = "node"

    async def recheck(self, ctx: ActionContext, shell: NodeShell, node: str) -> tuple[bool, str]:
        zombies = await zombie_entries(ctx, shell, node)
        if not zombies:
            return False, f"the checkpoint on {node} holds no entry of a missing pod any more"
        ctx.facts["zombies"] = describe_zombies(zombies)
        return True, f"{node}: {ctx.facts['zombies']}"

    def middle_plan(self, ctx: ActionContext, node: str) -> list[str]:
        return [
            self.step(ctx, node, STOP_KUBELET),
            self.step(ctx, node, move_checkpoint_command(new_backup_path(ctx.action_id or PLAN_ID))),
            self.step(ctx, node, START_KUBELET),
        ]

    async def middle(self, ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell, node: str) -> None:
        run.kubelet_down = True  # before the stop is sent: a lost answer must still end in a start
        await log.run(self.step(ctx, node, STOP_KUBELET), shell.systemctl("stop"), progress=run.progress())
        run.backup_planned = new_backup_path(ctx.action_id)
        run.backup = await log.run(
            self.step(ctx, node, move_checkpoint_command(run.backup_planned)),
            shell.move_checkpoint(run.backup_planned),
            detail=f"backup at {run.backup_planned}",
            progress=run.progress(),
        )
        run.before_start = await read_heartbeat(ctx, node, await read_node(ctx, node))
        await log.run(self.step(ctx, node, START_KUBELET), shell.systemctl("start"), progress=run.progress())
        run.kubelet_down = False

    async def verify(self, ctx: ActionContext, log: StepLog, shell: NodeShell, node: str) -> tuple[bool, str]:
        left = await zombie_entries(ctx, shell, node)
        if left:
            await log.note("verify: checkpoint has no zombie entries", "failed", describe_zombies(left))
            return False, (
                f"checkpoint on {node} was replaced but still lists missing pods ({describe_zombies(left)})."
            )
        await log.note("verify: checkpoint has no zombie entries", "ok")
        return True, f"checkpoint cleared on {node}."
