"""Checks on why the scheduler will not place the pod.

The scheduler's message is decoded, but taints, selectors and cordons are computed from the
nodes themselves: newer schedulers no longer name the taint, and the message only says how many
nodes failed, not which.
"""

from __future__ import annotations

import re
from typing import Any

from bot.engine.checks.common import candidate_nodes, gpu_asks, is_unscheduled, pod_ref, target, target_pod
from bot.engine.context import Context
from bot.engine.logic.affinity import node_matches
from bot.engine.logic.scheduling import NOT_READY_TAINTS, parse_event_messages
from bot.engine.logic.taints import toleration_yaml, untolerated_taints
from bot.registry import check

_WEBHOOK = re.compile(r'admission webhook "(?P<name>[^"]+)" denied the request:?\s*(?P<why>.*)', re.S)


def _events(ctx: Context, which: str) -> list[dict[str, Any]]:
    return list((ctx.fact("kube.events") or {}).get(which) or [])


@check("sched.events", needs=("kube.target", "kube.events"))
def scheduler_message(ctx: Context) -> None:
    """Decode the newest FailedScheduling message into insufficient-resource and qGPU findings."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    parsed = parse_event_messages(_events(ctx, "pod"))
    if not parsed:
        return
    msg = parsed[0]
    ref = pod_ref(pod)
    known = {"untolerated_taint", "node_selector", "unschedulable"}  # computed by their own checks
    unrecognised = []
    qgpu_lines: list[str] = []
    for reason in msg.reasons:
        line = f"{reason.count} {reason.text}" if reason.count else reason.text
        if reason.category == "insufficient_gpu":
            ctx.emit(
                "SCHED_INSUFFICIENT_GPU",
                pod=ref,
                resource=reason.resource or "GPU",
                count=reason.count,
                requested=_fmt(gpu_asks(pod).get(reason.resource or "", 0)),
                evidence=[line, msg.raw[:1000]],
                rank=20,
            )
        elif reason.category == "insufficient_other":
            ctx.emit(
                "SCHED_INSUFFICIENT_OTHER",
                pod=ref,
                resource=reason.resource or "resource",
                count=reason.count,
                evidence=[line],
                rank=30,
            )
        elif reason.category == "qgpu_alloc_failed" and reason.qgpu is not None:
            qgpu_lines += [line, "  " + reason.qgpu.describe()]
        elif reason.category == "too_many_pods":
            ctx.emit("SCHED_INSUFFICIENT_OTHER", pod=ref, resource="pods", count=reason.count, evidence=[line], rank=30)
        elif reason.category == "volume":
            ctx.emit("SCHED_VOLUME", pod=ref, message=reason.text[:200], evidence=[line], rank=26)
        elif reason.category in known or reason.category in ("not_ready", "unknown_conditions"):
            continue  # computed from the nodes by sched.taints/affinity/cordoned/node_health
        elif reason.category == "unrecognised":
            unrecognised.append(line)
    if qgpu_lines:
        # One finding for all nodes: each histogram entry is a group of nodes with the same card state.
        count = sum(r.count for r in msg.reasons if r.category == "qgpu_alloc_failed")
        ctx.emit("SCHED_QGPU_ALLOC_FAILED", pod=ref, count=count, evidence=qgpu_lines, rank=15)
    if msg.prefilter and not msg.reasons:
        if msg.prefilter_category == "volume":
            ctx.emit("SCHED_VOLUME", pod=ref, message=msg.prefilter[:200], evidence=[msg.raw[:1000]], rank=26)
        elif msg.prefilter_category != "not_ready":
            unrecognised.append(msg.prefilter)
    if unrecognised:
        ctx.emit("SCHED_UNRECOGNISED", pod=ref, message=msg.raw[:300], evidence=[msg.raw[:2000]], rank=60)


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@check("sched.taints", needs=("kube.target", "kube.nodes"))
def taints(ctx: Context) -> None:
    """Untolerated taints on the nodes that could otherwise run the pod, with the toleration to add."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    candidates = candidate_nodes(ctx, pod)
    blocked: dict[str, list[str]] = {}
    first: dict[str, dict[str, Any]] = {}
    for name, node in sorted(candidates.items()):
        for taint in untolerated_taints(pod, node):
            if taint.get("key") == "node.kubernetes.io/unschedulable" or taint.get("key") in NOT_READY_TAINTS:
                continue  # a cordon or node health: a toleration is not the fix (sched.cordoned, node_health)
            text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
            blocked.setdefault(text, []).append(name)
            first.setdefault(text, taint)
    if not blocked:
        return
    # Only a cause when every candidate node is blocked by some taint.
    blocked_nodes = {n for ns in blocked.values() for n in ns}
    if blocked_nodes != set(candidates):
        return
    for text, names in blocked.items():
        ctx.emit(
            "SCHED_UNTOLERATED_TAINT",
            pod=pod_ref(pod),
            taint=text,
            nodes=", ".join(names),
            toleration=toleration_yaml(first[text]),
            evidence=[f"{n}: taint {text}" for n in names] + ["pod tolerations: " + _tolerations(pod)],
            rank=12,
        )


def _tolerations(pod: dict[str, Any]) -> str:
    tols = (pod.get("spec") or {}).get("tolerations") or []
    parts = [f"{t.get('key', '*')}:{t.get('operator', 'Equal')}:{t.get('effect', '*')}" for t in tols]
    return ", ".join(parts) or "none"


@check("sched.affinity", needs=("kube.target", "kube.nodes"))
def affinity(ctx: Context) -> None:
    """Node selector / required affinity that no candidate node satisfies, shown beside node labels."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    spec = pod.get("spec") or {}
    if not spec.get("nodeSelector") and not ((spec.get("affinity") or {}).get("nodeAffinity")):
        return
    candidates = candidate_nodes(ctx, pod)
    results = {name: node_matches(pod, node) for name, node in candidates.items()}
    if not results or any(r.ok for r in results.values()):
        return
    selector = ", ".join(f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items()) or "node affinity"
    evidence = [f"{name}: {'; '.join(r.mismatches)}" for name, r in sorted(results.items())]
    ctx.emit(
        "SCHED_NODE_SELECTOR_MISMATCH", pod=pod_ref(pod), selector=selector, evidence=evidence[:20], rank=12
    )


@check("sched.cordoned", needs=("kube.target", "kube.nodes"))
def cordoned(ctx: Context) -> None:
    """Candidate nodes marked unschedulable; a cause when they are all the pod could use."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    candidates = candidate_nodes(ctx, pod)
    cordoned_nodes = sorted(n for n, o in candidates.items() if (o.get("spec") or {}).get("unschedulable"))
    if not cordoned_nodes:
        return
    all_blocked = len(cordoned_nodes) == len(candidates)
    ctx.emit(
        "SCHED_UNSCHEDULABLE_NODE",
        pod=pod_ref(pod),
        nodes=", ".join(cordoned_nodes),
        count=len(cordoned_nodes),
        evidence=[f"{n}: spec.unschedulable=true" for n in cordoned_nodes],
        rank=14 if all_blocked else 70,
    )


@check("workload.webhook", needs=("kube.target", "kube.events"))
def webhook(ctx: Context) -> None:
    """An admission webhook denied pod creation: the controller's FailedCreate says which."""
    t = target(ctx)
    if t is None:
        return
    for event in sorted(_events(ctx, "owners") + _events(ctx, "pod"), key=_event_time, reverse=True):
        message = str(event.get("message") or "")
        match = _WEBHOOK.search(message)
        if not match:
            continue
        obj = event.get("involvedObject") or {}
        ctx.emit(
            "SCHED_WEBHOOK_DENIED",
            pod=f"{t.namespace}/{t.name}",
            webhook=match.group("name"),
            message=match.group("why")[:300],
            evidence=[f"{obj.get('kind')}/{obj.get('name')}: {event.get('reason')}: {message[:1500]}"],
            rank=5,
        )
        return


def _event_time(event: dict[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


@check("sched.node_health", needs=("kube.target", "kube.nodes"))
def node_health(ctx: Context) -> None:
    """Candidate nodes that are not Ready cannot take the pod, whatever the message says about them."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod):
        return
    candidates = candidate_nodes(ctx, pod)
    for name, node in sorted(candidates.items()):
        conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
        ready = conditions.get("Ready") or {}
        if ready.get("status") == "True":
            continue
        reason = str(ready.get("reason") or "no Ready condition")
        ctx.emit(
            "NODE_NOT_READY",
            node=name,
            reason=reason,
            evidence=[f"{name}: Ready={ready.get('status', 'missing')} {reason}: {ready.get('message', '')}".strip()],
            rank=9 if len(candidates) == 1 else 30,
        )


@check("sched.silence", needs=("kube.target", "kube.events"))
def silence(ctx: Context) -> None:
    """A pending pod the scheduler has said nothing about: wrong schedulerName, or no scheduler running."""
    pod = target_pod(ctx)
    if pod is None or not is_unscheduled(pod) or parse_event_messages(_events(ctx, "pod")):
        return
    if any(e.code.startswith(("SCHED_", "SPEC_", "QGPU_", "NS_")) for e in ctx.emissions):
        return
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "?")
    ctx.emit(
        "SCHED_NO_EVENTS",
        pod=pod_ref(pod),
        evidence=[f"spec.schedulerName: {scheduler}", f"created: {created}", "FailedScheduling events: none"],
        rank=70,
    )
