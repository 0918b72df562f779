"""``qgpu.restart-manager`` and ``qgpu.rollout-restart``: restart the qGPU node components.

The qGPU components live in ``kube-system`` on TKE and in a ``qgpu`` namespace on the field notes'
TCE cluster, so both actions discover them by name or label across namespaces (never by a
hard-coded namespace). ``restart-manager`` deletes the qgpu-manager pod on one node gracefully
(its DaemonSet recreates it); ``rollout-restart`` sets the ``restartedAt`` template annotation on
every qGPU DaemonSet, exactly as ``kubectl rollout restart`` does.

Must never delete a DaemonSet or a pod on another node than the one named.
"""

from __future__ import annotations

from typing import Any

from bot.actions.base import ActionContext, ActionOutcome, BaseAction, action
from bot.actions.kube_writes import GRACE_PERIOD_S, RESTARTED_AT
from bot.actions.steps import StepFailed, StepLog
from bot.kube.objects import meta_of
from bot.names import validate_name, validate_namespace

MANAGER_HINT = "qgpu-manager"



def is_manager_pod(pod: dict[str, Any]) -> bool:
    meta = meta_of(pod)
    words = [str(meta.get("name", ""))] + [str(v) for v in (meta.get("labels") or {}).values()]
    return any(MANAGER_HINT in w for w in words)


def is_qgpu(obj: dict[str, Any]) -> bool:
    meta = meta_of(obj)
    words = [str(meta.get("name", ""))] + [str(v) for v in (meta.get("labels") or {}).values()]
    return any("qgpu" in w.lower() for w in words)


def rfc3339(ctx: ActionContext) -> str:
    return ctx.clock().strftime("%Y-%m-%dT%H:%M:%SZ")


@action("qgpu.restart-manager")
class RestartManager(BaseAction):
    blast_radius = (
        "Deletes the qgpu-manager pod on this node gracefully (30 s, never --force); its DaemonSet "
        "recreates it. Running qGPU containers keep running; new qGPU pods on the node wait until "
        "the manager is back."
    )
    done = "a new qgpu-manager pod runs on the node (the DaemonSet recreated it)"
    required = {"node": lambda v: validate_name(v, what="node name")}
    target_param = "node"

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        node = ctx.param("node")
        pods = await ctx.kube.list_pods(field_selector=f"spec.nodeName={node}")
        managers = [p for p in pods if is_manager_pod(p) and not meta_of(p).get("deletionTimestamp")]
        if not managers:
            return False, f"no live qgpu-manager pod runs on {node}"
        ctx.facts["pods"] = [
            (meta_of(p)["namespace"], meta_of(p)["name"], str(meta_of(p).get("uid") or "")) for p in managers
        ]
        names = ", ".join(f"{ns}/{name}" for ns, name, _ in ctx.facts["pods"])
        return True, f"qgpu-manager on {node}: {names}"

    async def plan(self, ctx: ActionContext) -> list[str]:
        pods = ctx.facts.get("pods") or []
        if not pods:
            return [
                f"DELETE the qgpu-manager pod(s) on node {ctx.param('node')} "
                f"gracePeriodSeconds={GRACE_PERIOD_S} (found when the precondition runs)"
            ]
        return [f"DELETE pod {ns}/{name} gracePeriodSeconds={GRACE_PERIOD_S}" for ns, name, _ in pods]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        node = ctx.param("node")
        log = StepLog(ctx)
        try:
            for ns, name, uid in ctx.facts.get("pods") or []:
                await log.run(f"delete pod {ns}/{name}", ctx.writer.delete_pod(ns, name, uid=uid))
        except StepFailed as failed:
            return ActionOutcome(
                False,
                f"qgpu-manager restart on {node} failed: {failed.step.detail}",
                log.steps,
                state=f"node {node}: qgpu-manager not restarted",
            )
        return ActionOutcome(
            True,
            f"qgpu-manager pod on {node} deleted; its DaemonSet recreates it.",
            log.steps,
            state=f"node {node}: qgpu-manager restarting",
        )


@action("qgpu.rollout-restart")
class RolloutRestart(BaseAction):
    blast_radius = (
        "Rolls every qGPU DaemonSet (qgpu-manager and friends) node by node, like kubectl rollout "
        "restart. Running qGPU containers keep running; qGPU scheduling on each node pauses while "
        "its pod restarts."
    )
    done = "every qGPU DaemonSet has a new restartedAt and its pods were replaced"
    optional = {"namespace": validate_namespace, "daemonset": lambda v: validate_name(v, what="daemonset")}

    def target(self, params: Any) -> str:
        return str(params.get("daemonset") or "qgpu")

    async def precondition(self, ctx: ActionContext) -> tuple[bool, str]:
        found = [d for d in await ctx.kube.list_daemonsets() if is_qgpu(d)]
        if ctx.param("namespace"):
            found = [d for d in found if meta_of(d).get("namespace") == ctx.param("namespace")]
        if ctx.param("daemonset"):
            found = [d for d in found if meta_of(d).get("name") == ctx.param("daemonset")]
        if not found:
            return False, "no qGPU DaemonSet found in any namespace"
        ctx.facts["daemonsets"] = [(meta_of(d)["namespace"], meta_of(d)["name"]) for d in found]
        return True, "qGPU DaemonSets: " + ", ".join(f"{ns}/{n}" for ns, n in ctx.facts["daemonsets"])

    async def plan(self, ctx: ActionContext) -> list[str]:
        at = rfc3339(ctx)
        sets = ctx.facts.get("daemonsets") or [("<namespace>", "<every qGPU DaemonSet>")]
        return [
            f"PATCH daemonset {ns}/{name} spec.template.metadata.annotations[{RESTARTED_AT}]={at}"
            for ns, name in sets
        ]

    async def _run(self, ctx: ActionContext) -> ActionOutcome:
        at = rfc3339(ctx)
        log = StepLog(ctx)
        try:
            for ns, name in ctx.facts.get("daemonsets") or []:
                await log.run(
                    f"rollout-restart daemonset {ns}/{name}", ctx.writer.restart_daemonset(ns, name, at)
                )
        except StepFailed as failed:
            return ActionOutcome(
                False,
                f"rollout restart stopped: {failed.step.detail}",
                log.steps,
                state="DaemonSets before the failed one were restarted; the rest were not",
            )
        n = len(log.steps)
        return ActionOutcome(
            True,
            f"{n} qGPU DaemonSet(s) rolling (restartedAt={at}).",
            log.steps,
            state=f"{n} DaemonSet(s) rolling",
        )
