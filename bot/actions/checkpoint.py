"""``checkpoint.clear``: move the kubelet device-plugin checkpoint aside so zombie allocations go.

Order: cordon (unless already cordoned) → ``systemctl stop kubelet`` → move the checkpoint to a
timestamped backup beside it → ``systemctl start kubelet`` (the kubelet writes a fresh one) →
wait for Ready → uncordon only if gpubot cordoned. The precondition re-probes the node over SSH
and the pods bound to it: zombie entries must still exist and their pods must still be gone.

Must never delete the checkpoint outright or touch anything but the file and the kubelet unit.
"""

from __future__ import annotations

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.node_exec import backup_path, move_checkpoint_command
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


@action("checkpoint.clear")
class ClearCheckpoint(BaseAction):
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

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        node = ctx.param("node")
        obj = await read_node(ctx, node)
        ctx.facts["cordoned"] = is_cordoned(obj)
        async with shell_for(ctx, node, obj) as shell:
            zombies = await zombie_entries(ctx, shell, node)
        if not zombies:
            return False, f"the checkpoint on {node} holds no entry of a missing pod any more"
        ctx.facts["zombies"] = describe_zombies(zombies)
        return True, f"{node}: {ctx.facts['zombies']}"

    async def plan(self, ctx: ActionContext) -> list[str]:
        node = ctx.param("node")
        if "cordoned" not in ctx.facts:
            ctx.facts["cordoned"] = is_cordoned(await read_node(ctx, node))
        cordoned = ctx.facts["cordoned"]
        return [
            f"cordon node {node}: PATCH spec.unschedulable=true"
            if not cordoned
            else f"leave node {node} cordoned (it already is)",
            f"ssh {node}: systemctl stop kubelet",
            f"ssh {node}: {move_checkpoint_command(ctx.clock())}",
            f"ssh {node}: systemctl start kubelet",
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
                    await log.run(f"ssh {node}: systemctl stop kubelet", shell.systemctl("stop"))
                    run.kubelet_down = True
                    now = ctx.clock()
                    run.backup = await log.run(
                        f"ssh {node}: {move_checkpoint_command(now)}",
                        shell.move_checkpoint(now),
                        detail=f"backup at {backup_path(now)}",
                    )
                    await log.run(f"ssh {node}: systemctl start kubelet", shell.systemctl("start"))
                    run.kubelet_down = False
                    await log.run(f"wait for node {node} Ready", wait_ready(ctx, shell, node))
                    await uncordon_if_ours(ctx, log, run)
                except StepFailed as failed:
                    state = await restore(ctx, log, run, shell)
                    return ActionOutcome(
                        False,
                        f"checkpoint.clear on {node} stopped at '{failed.step.what}': {failed.step.detail}.",
                        log.steps,
                        state=state,
                    )
                left = await zombie_entries(ctx, shell, node)
                if left:
                    log.note("verify: checkpoint has no zombie entries", "failed", describe_zombies(left))
                else:
                    log.note("verify: checkpoint has no zombie entries", "ok")
                kubelet = await shell.kubelet_state()
        except GpubotError as exc:
            # the connection itself failed (before any step, or while verifying)
            state = node_state(run, cordoned=run.we_cordoned, kubelet="unknown", ready="unknown")
            return ActionOutcome(
                False, f"checkpoint.clear on {node}: {exc.user_message}", log.steps, state=state
            )
        state = node_state(
            run, cordoned=is_cordoned(await read_node(ctx, node)), kubelet=kubelet, ready="True"
        )
        ok = not left
        summary = (
            f"checkpoint cleared on {node}."
            if ok
            else f"checkpoint on {node} was replaced but still lists missing pods ({describe_zombies(left)})."
        )
        return ActionOutcome(ok, summary, log.steps, state=state)
