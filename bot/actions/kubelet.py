"""``kubelet.restart``: restart the kubelet of one node behind a cordon.

Order: cordon (unless already cordoned) → ``systemctl restart kubelet`` → wait until the kubelet
is active and the node Ready, within ``node_ready_timeout_s`` → uncordon only if gpubot cordoned.
A restart re-reads device-plugin state, which clears stale allocations after a force delete
(kubernetes#130145) without touching the checkpoint file.

Must never restart anything but the kubelet unit, and never uncordon a node it did not cordon.
"""

from __future__ import annotations

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.nodeops import (
    NodeRun,
    cordon_if_needed,
    describe_zombies,
    is_cordoned,
    node_state,
    read_node,
    restore,
    shell_for,
    uncordon_if_ours,
    wait_ready,
    zombie_entries,
)
from bot.actions.steps import StepFailed, StepLog
from bot.errors import GpubotError
from bot.names import validate_name


@action("kubelet.restart")
class RestartKubelet(BaseAction):
    blast_radius = (
        "Cordons the node and restarts kubelet: pods on it lose contact with the API for 10-30 s "
        "(containers keep running, no pod is deleted). Clears stale device state after a force "
        "delete (kubernetes#130145). Uncordons only if gpubot cordoned it."
    )
    done = "kubelet is active, the node is Ready, and it is schedulable again if gpubot cordoned it"
    required = {"node": lambda v: validate_name(v, what="node name")}
    target_param = "node"

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        node = ctx.param("node")
        obj = await read_node(ctx, node)
        ctx.facts["cordoned"] = is_cordoned(obj)
        async with shell_for(ctx, node, obj) as shell:
            kubelet = await shell.kubelet_state()
            if ctx.finding_code == "CHECKPOINT_ZOMBIE":
                # offered for zombie allocations: only worth the outage if they are still there
                zombies = await zombie_entries(ctx, shell, node)
                if not zombies:
                    return False, f"the checkpoint on {node} holds no entry of a missing pod any more"
                return True, f"{node}: {describe_zombies(zombies)}; kubelet {kubelet}"
        return True, f"node {node} exists and answers over SSH (kubelet {kubelet})"

    async def plan(self, ctx: ActionContext) -> list[str]:
        node = ctx.param("node")
        if "cordoned" not in ctx.facts:
            ctx.facts["cordoned"] = is_cordoned(await read_node(ctx, node))
        cordoned = ctx.facts["cordoned"]
        return [
            f"cordon node {node}: PATCH spec.unschedulable=true"
            if not cordoned
            else f"leave node {node} cordoned (it already is)",
            f"ssh {node}: systemctl restart kubelet",
            f"wait until kubelet is active and node {node} is Ready (at most "
            f"{ctx.settings.node_ready_timeout_s:g}s)",
            f"uncordon node {node}: PATCH spec.unschedulable=false"
            if not cordoned
            else f"leave node {node} cordoned",
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
                    run.kubelet_down = True  # until the restart is known to have worked
                    await log.run(f"ssh {node}: systemctl restart kubelet", shell.systemctl("restart"))
                    run.kubelet_down = False
                    await log.run(f"wait for node {node} Ready", wait_ready(ctx, shell, node))
                    await uncordon_if_ours(ctx, log, run)
                except StepFailed as failed:
                    state = await restore(ctx, log, run, shell)
                    return ActionOutcome(
                        False,
                        f"kubelet.restart on {node} stopped at '{failed.step.what}': {failed.step.detail}.",
                        log.steps,
                        state=state,
                    )
                kubelet = await shell.kubelet_state()
        except GpubotError as exc:
            state = node_state(run, cordoned=run.we_cordoned, kubelet="unknown", ready="unknown")
            return ActionOutcome(
                False, f"kubelet.restart on {node}: {exc.user_message}", log.steps, state=state
            )
        state = node_state(
            run, cordoned=is_cordoned(await read_node(ctx, node)), kubelet=kubelet, ready="True"
        )
        return ActionOutcome(True, f"kubelet restarted on {node}; node Ready.", log.steps, state=state)
