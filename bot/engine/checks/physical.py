"""Cross-checks of the API's view against the node's physical truth: leaks, zombie checkpoint
entries, and nodes we could not reach. Shared by why-pending and node-status."""

from __future__ import annotations

from bot.engine.checks.common import QGPU_CORE, is_unscheduled, target_pod
from bot.engine.context import Context
from bot.engine.logic.scheduling import parse_event_messages
from bot.errors import NodeProbeError
from bot.probes.node import NodeObservation
from bot.probes.slim import SlimPod
from bot.registry import check
from bot.report import Remediation

#: memory a card uses with no process (driver/context overhead), MiB
IDLE_MEMORY_MIB = 64


def observations(ctx: Context) -> dict[str, NodeObservation]:
    results = ctx.fact("node.physical") or {}
    return {n: r for n, r in results.items() if isinstance(r, NodeObservation)}


def node_offers(node: str, *, qgpu: bool) -> list[Remediation]:
    offers = []
    if qgpu:
        offers.append(
            Remediation(
                "qgpu.restart-manager",
                {"node": node},
                f"Restart the qgpu-manager pod on {node} (its DaemonSet recreates it)",
            )
        )
    offers.append(
        Remediation(
            "kubelet.restart", {"node": node}, f"Cordon {node}, restart kubelet, wait for Ready, uncordon"
        )
    )
    offers.append(
        Remediation(
            "checkpoint.clear",
            {"node": node},
            f"Cordon {node}, stop kubelet, back up and remove the checkpoint, start kubelet",
        )
    )
    return offers


@check("node.reachability", needs=("node.physical",))
def reachability(ctx: Context) -> None:
    """NODE_UNREACHABLE with the reason (refused, timeout, auth, host key)."""
    for node, result in sorted((ctx.fact("node.physical") or {}).items()):
        if isinstance(result, NodeProbeError):
            ctx.emit(
                "NODE_UNREACHABLE", node=node, reason=result.reason, evidence=[result.user_message], rank=80
            )


def _idle(obs: NodeObservation) -> bool:
    return not obs.processes and all((g.memory_used_mib or 0) <= IDLE_MEMORY_MIB for g in obs.gpus)


@check("checkpoint.zombies", needs=("node.physical", "kube.node_pods"))
def zombies(ctx: Context) -> None:
    """Checkpoint entries whose pod UID no longer exists on that node, with the devices they pin."""
    by_node: dict[str, list[SlimPod]] = ctx.fact("kube.node_pods") or {}
    for node, obs in sorted(observations(ctx).items()):
        if obs.checkpoint is None:
            continue
        live_uids = {p.uid for p in by_node.get(node, [])}
        dead = [e for e in obs.checkpoint.entries if e.pod_uid not in live_uids]
        if not dead:
            continue
        uids = sorted({e.pod_uid for e in dead})
        evidence = [
            f"{node}: PodUID {e.pod_uid} container {e.container} {e.resource}: {len(e.device_ids)} device(s) "
            + ", ".join(e.device_ids[:6])
            + (" …" if len(e.device_ids) > 6 else "")
            for e in dead[:20]
        ]
        evidence.append(
            f"{node}: no pod with these UIDs is bound to the node "
            f"(checked {len(live_uids)} pods); checkpoint format {obs.checkpoint.format}"
        )
        qgpu = any(e.resource.startswith("tke.cloud.tencent.com/") for e in dead)
        ctx.emit(
            "CHECKPOINT_ZOMBIE",
            node=node,
            count=len(uids),
            uids=", ".join(uids[:5]),
            devices=sum(len(e.device_ids) for e in dead),
            evidence=evidence,
            remediations=node_offers(node, qgpu=qgpu),
            rank=11,
        )


@check("leak.triage", needs=("node.physical", "kube.node_pods", "kube.target"))
def leak(ctx: Context) -> None:
    """The leak triage table: API allocation × nvidia-smi activity, per observed node."""
    by_node: dict[str, list[SlimPod]] = ctx.fact("kube.node_pods") or {}
    pod = target_pod(ctx)
    scheduler_used = 0.0
    if pod is not None and is_unscheduled(pod):
        for msg in parse_event_messages(((ctx.fact("kube.events") or {}).get("pod")) or [])[:1]:
            for reason in msg.reasons:
                if reason.qgpu is not None:
                    scheduler_used = max(scheduler_used, sum(c.used_core for c in reason.qgpu.cards))
    for node, obs in sorted(observations(ctx).items()):
        pods = [p for p in by_node.get(node, []) if p.live and p.gpu]
        allocated = {k: sum(p.gpu.get(k, 0) for p in pods) for p in pods for k in p.gpu}
        running = [p for p in pods if p.phase == "Running" and not p.terminating]
        zombie_uids = []
        if obs.checkpoint is not None:
            live = {p.uid for p in by_node.get(node, [])}
            zombie_uids = [e.pod_uid for e in obs.checkpoint.entries if e.pod_uid not in live]
        has_allocation = (
            bool(allocated) or bool(zombie_uids) or (scheduler_used > 0 and len(observations(ctx)) == 1)
        )
        if not has_allocation or not obs.gpus:
            continue
        alloc_text = ", ".join(f"{k}={v:g}" for k, v in sorted(allocated.items())) or "none by live pods"
        if zombie_uids:
            alloc_text += f"; checkpoint holds {len(zombie_uids)} entry(ies) of pods that no longer exist"
        physical = f"{len(obs.processes)} process(es), memory used " + ", ".join(
            f"GPU{g.index}={g.memory_used_mib or 0:g}MiB" for g in obs.gpus
        )
        if _idle(obs) and not running:
            ctx.emit(
                "LEAK_LOGICAL_NOT_PHYSICAL",
                node=node,
                evidence=[
                    f"{node} API allocation: {alloc_text}",
                    f"{node} nvidia-smi: {physical}",
                    f"{node}: running GPU pods: none",
                ],
                remediations=node_offers(
                    node, qgpu=any(QGPU_CORE in p.gpu for p in pods) or bool(zombie_uids)
                ),
                rank=13,
            )
        elif obs.processes and allocated:
            owners = ", ".join(p.ref for p in running[:5]) or "unknown (no running pod)"
            ctx.emit(
                "ALLOCATION_REAL",
                node=node,
                pod=owners,
                evidence=[f"{node} API allocation: {alloc_text}", f"{node} nvidia-smi: {physical}"]
                + [
                    f"pid {q.pid} {q.process_name} {q.used_memory_mib or 0:g}MiB on {q.gpu_uuid}"
                    for q in obs.processes[:10]
                ],
                rank=45,
            )
