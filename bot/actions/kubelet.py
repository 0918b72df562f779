"""``kubelet.restart``: restart the kubelet of one node behind a cordon.

Order: cordon (unless already cordoned) → ``systemctl restart kubelet`` → wait until the kubelet
is active and the node Ready with a heartbeat newer than the restart, within
``node_ready_timeout_s`` → uncordon only if gpubot cordoned.
A restart re-reads device-plugin state, which clears stale allocations after a force delete
(kubernetes#130145) without touching the checkpoint file.

Must never restart anything but the kubelet unit, and never uncordon a node it did not cordon.
"""

from __future__ import annotations

from bot.actions.base import ActionContext, action
from bot.actions.node_exec import RESTART_KUBELET, NodeShell
from bot.actions.node_heartbeat import read_heartbeat
from bot.actions.node_procedure import NodeProcedure
from bot.actions.nodeops import NodeRun, describe_zombies, read_node, zombie_entries
from bot.actions.steps import StepLog
from bot.names import validate_name


@action("kubelet.restart")
class RestartKubelet(NodeProcedure):
    blast_radius = (
        "Cordons the node and restarts kubelet: pods on it lose contact with the API for 10-30 s "
        "(containers keep running, no pod is deleted). Clears stale device state after a force "
        "delete (kubernetes#130145). Uncordons only if gpubot cordoned it."
    )
    done = "kubelet is active, the node is Ready, and it is schedulable again if gpubot cordoned it"
    required = {"node": lambda v: validate_name(v, what="node name")}
    target_param = "node"

    async def recheck(self, ctx: ActionContext, shell: NodeShell, node: str) -> tuple[bool, str]:
        kubelet = await shell.kubelet_state()
        if ctx.finding_code == "CHECKPOINT_ZOMBIE":
            # offered for zombie allocations: only worth the outage if they are still there
            zombies = await zombie_entries(ctx, shell, node)
            if not zombies:
                return False, f"the checkpoint on {node} holds no entry of a missing pod any more"
            return True, f"{node}: {describe_zombies(zombies)}; kubelet {kubelet}"
        over = "SSH" if shell.via == "ssh" else f"its {shell.via}"
        return True, f"node {node} exists and answers over {over} (kubelet {kubelet})"

    def middle_plan(self, ctx: ActionContext, node: str) -> list[str]:
        return [self.step(ctx, node, RESTART_KUBELET)]

    async def middle(self, ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell, node: str) -> None:
        run.before_start = await read_heartbeat(ctx, node, await read_node(ctx, node))
        run.kubelet_down = True  # until the restart is known to have worked
        await log.run(self.step(ctx, node, RESTART_KUBELET), shell.systemctl("restart"), progress=run.progress())
        run.kubelet_down = False

    async def verify(self, ctx: ActionContext, log: StepLog, shell: NodeShell, node: str) -> tuple[bool, str]:
        return True, f"kubelet restarted on {node}; node Ready."
