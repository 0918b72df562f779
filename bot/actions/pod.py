"""``pod.delete``: delete one pod gracefully so its controller recreates it.

Grace period 30 s, never a force delete: force-deleting a pod whose kubelet has not confirmed it
is what leaves devices allocated to a pod that no longer exists (kubernetes#130145). The delete
carries the uid the precondition saw, so a pod recreated under the same name is never hit.

Must never delete a pod that is already terminating (a second delete changes nothing), nor pass
a zero grace period.
"""

from __future__ import annotations

from typing import Any

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.kube_writes import GRACE_PERIOD_S
from bot.actions.steps import StepFailed, StepLog
from bot.errors import NotFoundError
from bot.kube.objects import meta_of, owner_refs_of
from bot.names import validate_name, validate_namespace


def owner_text(pod: dict[str, Any]) -> str:
    owners = owner_refs_of(pod)
    ctrl = next((o for o in owners if isinstance(o, dict) and o.get("controller")), None)
    return f"{ctrl.get('kind')}/{ctrl.get('name')}" if ctrl else ""


@action("pod.delete")
class DeletePod(BaseAction):
    blast_radius = (
        "Deletes the pod gracefully (30 s to stop, never --force: force deletes leak GPU "
        "allocations, kubernetes#130145). Its controller recreates it; a bare pod is gone for good "
        "and its running work stops."
    )
    done = "the pod is gone (or replaced by its controller with a new uid)"
    required = {
        "namespace": validate_namespace,
        "pod": lambda v: validate_name(v, what="pod name"),
    }
    target_param = "pod"

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        ns, name = ctx.param("namespace"), ctx.param("pod")
        try:
            pod = await ctx.kube.get_object("Pod", name, ns)
        except NotFoundError:
            return False, f"pod {ns}/{name} no longer exists"
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            return False, f"pod {ns}/{name} is already terminating; gpubot never force-deletes"
        ctx.facts["uid"] = str(meta.get("uid") or "")
        ctx.facts["owner"] = owner_text(pod)
        owner = ctx.facts["owner"]
        return True, f"pod {ns}/{name} exists" + (f" (owned by {owner})" if owner else " (no controller)")

    async def plan(self, ctx: ActionContext) -> list[str]:
        uid = ctx.facts.get("uid", "")
        return [
            f"DELETE pod {ctx.param('namespace')}/{ctx.param('pod')} gracePeriodSeconds={GRACE_PERIOD_S}"
            + (f" preconditions.uid={uid}" if uid else "")
        ]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        ns, name = ctx.param("namespace"), ctx.param("pod")
        log = StepLog(ctx)
        try:
            await log.run(
                f"delete pod {ns}/{name}",
                ctx.writer.delete_pod(ns, name, uid=str(ctx.facts.get("uid", ""))),
            )
        except StepFailed as failed:
            return ActionOutcome(
                False,
                f"delete of pod {ns}/{name} failed: {failed.step.detail}",
                log.steps,
                state=f"pod {ns}/{name}: not deleted",
            )
        owner = ctx.facts.get("owner")
        after = f"{owner} will recreate it" if owner else "it has no controller, so nothing recreates it"
        return ActionOutcome(
            True,
            f"pod {ns}/{name} deleted gracefully; {after}.",
            log.steps,
            state=f"pod {ns}/{name}: terminating or gone",
        )
