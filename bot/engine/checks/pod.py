"""Checks on the target itself: does it exist, and what state is it in."""

from __future__ import annotations

from bot.engine.checks.common import pod_ref, target
from bot.engine.context import Context
from bot.engine.logic.pod_status import classify
from bot.registry import check
from bot.report import Remediation


@check("pod.lookup", needs=("kube.target",))
def lookup(ctx: Context) -> None:
    """POD_NOT_FOUND, saying whether the namespace or the object is missing, with close names."""
    t = target(ctx)
    if t is None:
        return
    if t.namespace_exists and (t.pod is not None or t.workload is not None):
        return
    what = (
        f"namespace {t.namespace}" if not t.namespace_exists else f"{t.kind.lower()} {t.namespace}/{t.name}"
    )
    evidence = [f"did you mean: {', '.join(t.suggestions)}"] if t.suggestions else []
    ctx.emit(
        "POD_NOT_FOUND",
        what=what,
        pod=t.name,
        namespace=t.namespace,
        evidence=evidence,
        rank=0,
    )


@check("pod.status", needs=("kube.target",), tables=("pod_status",))
def status(ctx: Context) -> None:
    """POD_RUNNING for a running pod; POD_STATUS for a known stuck state, explained from the table."""
    t = target(ctx)
    if t is None or t.pod is None:
        return
    state = classify(t.pod)
    ref = pod_ref(t.pod)
    if state.display_status == "Running" and state.ready:
        node = state.node or "?"
        ctx.emit("POD_RUNNING", pod=ref, node=node, evidence=[f"{ref} Running on {node}"], rank=1)
        return
    rows = {str(r.get("status")): r for r in ctx.tables.get("pod_status", [])}
    key = state.display_status
    if key == "Running" and not state.ready:
        key = "Running-not-ready"
    if state.terminating:
        key = "Terminating"
    elif state.last_reason == "OOMKilled":
        key = "OOMKilled"  # a crash loop whose runs end in the OOM killer: the memory limit is the cause
    row = rows.get(key) or rows.get(state.reason or "")
    if row is None or key == "Pending":
        return
    extra = state.reason if state.reason and state.reason != state.display_status else ""
    shown = state.display_status + (f" ({extra})" if extra else "")
    evidence = [f"{ref}: {shown}"]
    if state.detail:
        evidence.append(state.detail[:500])
    remediations: list[Remediation] | None = None
    if key in ("CrashLoopBackOff", "Terminating"):
        remediations = []
    ctx.emit(
        "POD_STATUS",
        pod=ref,
        status=key,
        reason=state.reason or "",
        container=state.container or "",
        meaning=str(row.get("meaning", "")),
        look_at=str(row.get("look_at", "")),
        evidence=evidence,
        remediations=remediations,
        rank=10,
    )


def pod_delete_offer(ref: str, why: str) -> Remediation:
    ns, _, name = ref.partition("/")
    return Remediation("pod.delete", {"namespace": ns, "pod": name}, why)


@check("pod.node_view", needs=("kube.target", "node.physical"))
def node_view(ctx: Context) -> None:
    """For a running pod, what nvidia-smi shows on *its* node: the host you look at may be another one."""
    from bot.errors import NodeProbeError

    running = [e for e in ctx.emissions if e.code == "POD_RUNNING"]
    if not running:
        return
    node = str(running[0].params.get("node", ""))
    result = (ctx.fact("node.physical") or {}).get(node)
    if result is None:
        return
    if isinstance(result, NodeProbeError):
        running[0].evidence.append(f"nvidia-smi on {node}: not available (ssh {result.reason})")
        return
    for g in result.gpus:
        running[0].evidence.append(
            f"{node} GPU{g.index} {g.name}: util {g.utilization_gpu}% mem {g.memory_used_mib}/"
            f"{g.memory_total_mib} MiB {g.temperature_c}C {g.power_w}W"
        )
    for p in result.processes:
        running[0].evidence.append(
            f"{node} pid {p.pid} {p.process_name} {p.used_memory_mib} MiB on {p.gpu_uuid}"
        )
