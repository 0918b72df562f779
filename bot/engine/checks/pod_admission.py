"""Pods the scheduler placed but the node's kubelet refused: why, and what it takes to stop it.

A rejected pod is Failed at once and never retried; its ReplicaSet, Job or StatefulSet makes a
new one, which often lands on the same node and is refused again, so Failed pods pile up while the
workload never runs. The kubelet's message is the evidence; what lies behind it decides the fix:

- ``lost``: the node lost or withdrew a card (its capacity is above its allocatable, nvidia-smi
  cannot reach a card, an Xid 79, or the message itself says "GPU is lost");
- ``stale``: "requested number of devices unavailable … Available: 0" while the API counts
  enough free cards on the node and none is withdrawn: the kubelet's own record of allocated
  devices is stale (kubernetes/kubernetes#130145), and restarting the kubelet rebuilds it;
- ``full``: the node really had no free device (a pod bound with spec.nodeName, or a race);
- ``plugin`` / ``unregistered``: the device plugin's Allocate or GetPreferredAllocation call
  failed (MIG strategy mismatch, NVML permissions, a crashed plugin), it reported "no healthy
  devices" while every card is healthy (it was restarting), or it has not registered with the
  kubelet;
- ``topology``: the topology manager found no NUMA-aligned set of devices;
- ``other``: any other reason, shown verbatim with where to look.

The words for each case are the ``admission_causes`` table of the runbook.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import fmt_num
from bot.engine.checks._gpu_health import NodeHealth, node_health, plugin_running
from bot.engine.facts import Facts
from bot.kube.admission import Rejection
from bot.kube.objects import meta_of
from bot.kube.pod_status import classify, running_ready
from bot.kube.resources import node_gpu_capacity


class DeviceAdmissionFailed(TypedDict):
    pod: str
    namespace: str
    what: str
    count: int
    node: str
    reason: str
    message: str
    resource: str
    meaning: str
    look_at: str
    stale: bool
    cordon: bool
    restart_plugin: bool
    plugin_namespace: str
    plugin_pod: str


DEVICE_ADMISSION_FAILED = Code("DEVICE_ADMISSION_FAILED", DeviceAdmissionFailed)


def _free(facts: Facts, node: str, resource: str) -> tuple[float, float, float] | None:
    """(allocatable, requested by live pods, free) of ``resource`` on ``node`` by the API's count."""
    caps = node_gpu_capacity(facts.nodes.get(node) or {})
    if resource not in caps:
        return None
    allocatable = caps[resource][1]
    used = sum(p.gpu.get(resource, 0) for p in facts.node_pods.get(node, []) if p.live)
    return allocatable, used, allocatable - used


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(str(cs.get("restartCount") or 0)) for cs in statuses if isinstance(cs, dict))


def _cause(facts: Facts, rej: Rejection, health: NodeHealth) -> str:
    if rej.cause in ("topology", "other", "unregistered"):
        return rej.cause
    lost = bool(health.by_class("lost")) or bool(
        health.withdrawn if not rej.resource else health.withdrawn.get(rej.resource)
    )
    if rej.cause == "lost" or lost:
        return "lost"
    if rej.cause in ("plugin", "unhealthy"):
        # "no healthy devices present" with every card healthy now: the plugin reported them
        # unhealthy for a while (it was restarting or re-registering)
        return "plugin"
    free = _free(facts, rej.node, rej.resource) if rej.resource else None
    if rej.cause == "unavailable" and free is not None and free[2] >= (rej.requested or 1):
        return "stale"
    return "full"


def _node_lines(facts: Facts, rej: Rejection, cause: str, health: NodeHealth) -> list[str]:
    node = rej.node
    if node not in facts.nodes:
        return [f"node {node} no longer exists in the API"]
    lines = []
    if health.withdrawn:
        lines.append(f"{node}: {health.withdrawn_text()} (the device plugin withdrew cards)")
    for card in health.by_class("lost", "reset")[:4]:
        lines.append(f"{node} {card.label}: {'; '.join(card.what)}")
    free = _free(facts, node, rej.resource) if rej.resource else None
    if free is not None:
        allocatable, used, left = free
        line = (f"{node}: {rej.resource} allocatable {fmt_num(allocatable)}, requested by live pods "
                f"{fmt_num(used)}, free by the API's count {fmt_num(left)}")
        if rej.available is not None:
            line += f"; the kubelet said Available: {rej.available}"
        lines.append(line)
    if cause == "stale" and not health.unread:
        lines.append(f"{node}: no card is withdrawn, lost or erroring; the kubelet's record of allocated devices "
                     "disagrees with the pods that exist")
    if health.unread:
        lines.append(f"{node}: physical checks incomplete ({health.unread})")
    for pod in health.plugin_pods[:2]:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        restarts = _restarts(pod)
        lines.append(f"device plugin on {node}: {meta.get('namespace')}/{meta.get('name')} {status.get('phase', '?')}"
                     + (f", {restarts} restart(s)" if restarts else ""))
    for pod in facts.components.pods:
        meta = _dict(pod.get("metadata"))
        if _dict(pod.get("spec")).get("nodeName") != node or pod in health.plugin_pods:
            continue
        state = classify(pod)
        if not state.ready:
            lines.append(f"GPU component on {node}: {meta.get('namespace')}/{meta.get('name')} {state.display_status}"
                         + (f" ({state.restarts} restarts)" if state.restarts else ""))
    return lines


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _running_ready(pod: Any) -> bool:
    return running_ready(_dict(pod))


def _ready_since(facts: Facts) -> str:
    """The creation time of the newest Running and Ready pod of the target ("" when none)."""
    times = [str(_dict(_dict(p).get("metadata")).get("creationTimestamp") or "") for p in facts.target.pods
             if _running_ready(p)]
    return max(times, default="")


def run(facts: Facts) -> Iterator[Detection]:
    """DEVICE_ADMISSION_FAILED per node and cause, for the asked pod or its workload's pods."""
    found = facts.admission_rejected
    if not found:
        return
    # a replica created after the last rejection runs: the rejections are history to clean up
    recovered = _ready_since(facts)
    rows = {str(r.get("cause")): r for r in facts.table("admission_causes")}
    t = facts.target
    healths: dict[str, NodeHealth] = {}
    groups: dict[tuple[str, str, str], list[Rejection]] = {}
    for rej in found:
        if rej.node not in healths:
            healths[rej.node] = node_health(facts, rej.node)
        cause = _cause(facts, rej, healths[rej.node])
        groups.setdefault((rej.node, cause, rej.reason), []).append(rej)
    for (node, cause, reason), pods in sorted(groups.items()):
        newest, health = pods[0], healths[node]
        row = rows.get(cause) or rows.get("other") or {}
        if t.workload is not None:
            what = f"{len(pods)} pod(s) of {t.kind.lower()} {t.namespace}/{t.name}"
        else:
            what = f"pod {newest.ref}"
        evidence = [f"{newest.ref} ({newest.created or 'time unknown'}): {newest.reason}: {newest.message[:400]}"]
        same = [r for r in pods[1:] if r.message == newest.message]
        evidence += [f"{r.ref} ({r.created or 'time unknown'}): {r.reason}: {r.message[:400]}"
                     for r in pods[1:] if r.message != newest.message][:4]
        if same:
            names = ", ".join(r.name for r in same[:6]) + (f" and {len(same) - 6} more" if len(same) > 6 else "")
            evidence.append(f"rejected with the same message: {names} (the oldest at {same[-1].created or '?'})")
        evidence += _node_lines(facts, newest, cause, health)
        plugin = next((p for p in health.plugin_pods if plugin_running(p)), None)
        meta = meta_of(plugin)
        # a plugin that keeps restarting is not helped by one more restart: its log says why
        steady = plugin is not None and _restarts(plugin) == 0
        past = bool(recovered) and recovered > newest.created
        if past:
            evidence.append(f"a pod of the workload created at {recovered} runs and is Ready: "
                            "these rejections are past")
        yield DEVICE_ADMISSION_FAILED.detect(
            f"pod/{newest.ref}",
            {
                "pod": newest.ref,
                "namespace": newest.namespace,
                "what": what,
                "count": len(pods),
                "node": node,
                "reason": reason,
                "message": newest.message[:500],
                "resource": newest.resource or "the requested device",
                "meaning": str(row.get("meaning", "")),
                "look_at": str(row.get("look_at", "")),
                "stale": cause == "stale" and not past,
                "cordon": cause == "lost" and not past and not (health.cards or health.withdrawn)
            and not (facts.nodes.get(node, {}).get("spec") or {}).get("unschedulable"),
                "restart_plugin": cause in ("plugin", "unregistered") and steady and not past,
                "plugin_namespace": str(meta.get("namespace") or ""),
                "plugin_pod": str(meta.get("name") or ""),
            },
            role="past" if past else cause,
            evidence=evidence,
        )


CHECK = Check(
    name="pod.admission",
    reads=("target", "admission_rejected", "nodes", "node_pods", "node_readings", "components"),
    emits=(DEVICE_ADMISSION_FAILED,),
    run=run,
    tables=("admission_causes", "xid_codes"),
)
