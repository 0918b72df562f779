"""node-status checks: the per-node table (logical allocation beside the physical truth), node
conditions, and qGPU utilisation against the pods' core quotas.

The table is the signature view: what the API counts as allocated, what nvidia-smi shows, and
the verdict, side by side for every GPU node. Nodes that could not be reached keep their
logical columns. These checks only read gathered facts; they never call the cluster.
"""

from __future__ import annotations

from typing import Any

from bot.engine.checks.common import QGPU_CORE, fmt_num
from bot.engine.checks.physical import observations
from bot.engine.checks.working import Verdict, card_label, card_verdicts
from bot.engine.context import Context
from bot.engine.logic.resources import node_gpu_capacity
from bot.errors import NodeProbeError
from bot.probes.facts_kube import gpu_node_names
from bot.probes.slim import SlimPod
from bot.registry import check
from bot.report import Remediation

Obj = dict[str, Any]

FROM_CHECKPOINT = "card from the kubelet checkpoint's entry for the pod"
INFERRED = ("card inferred: the node's only running qGPU pod and its only card with processes "
            "(the API does not say which card a slice is on)")

#: pod name fragments of the node-level GPU components whose state the table shows
COMPONENT_HINTS = ("qgpu-manager", "qgpu-device-plugin", "nvidia-device-plugin", "gpu-device-plugin",
                   "nvidia-driver-daemonset", "gpu-operator")


def _ready(node: Obj) -> tuple[bool, str]:
    """(Ready is True, the condition's reason or a description of why not)."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            status = str(cond.get("status"))
            return status == "True", str(cond.get("reason") or f"Ready={status}")
    return False, "no Ready condition reported"


def _taints(node: Obj) -> list[str]:
    out = []
    for t in (node.get("spec") or {}).get("taints") or []:
        value = f"={t['value']}" if t.get("value") else ""
        out.append(f"{t.get('key')}{value}:{t.get('effect')}")
    return out


def _pod_line(p: SlimPod) -> str:
    asks = ", ".join(f"{k.rsplit('/', 1)[-1]}={fmt_num(v)}" for k, v in sorted(p.gpu.items()))
    state = "Terminating" if p.terminating else p.phase
    return f"{p.ref} [{state}] {asks}"


def _components(ctx: Context, node: str, pods: list[SlimPod]) -> list[str]:
    """State of the qGPU manager / device plugin pods on this node."""
    seen: set[str] = set()
    out = []
    for obj in (ctx.fact("qgpu.components") or {}).get("pods") or []:
        if (obj.get("spec") or {}).get("nodeName") != node:
            continue
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        ref = f"{meta.get('namespace')}/{meta.get('name')}"
        ready = all(c.get("ready") for c in status.get("containerStatuses") or [{}])
        state = "Terminating" if meta.get("deletionTimestamp") else str(status.get("phase") or "Pending")
        out.append(f"{ref} [{state}{'' if ready or state != 'Running' else ', not ready'}]")
        seen.add(ref)
    for p in pods:
        if p.ref not in seen and any(h in p.name for h in COMPONENT_HINTS):
            out.append(f"{p.ref} [{'Terminating' if p.terminating else p.phase}]")
    return out


def _logical(node: Obj, pods: list[SlimPod]) -> dict[str, dict[str, float]]:
    live = [p for p in pods if p.live]
    return {
        res: {"capacity": cap, "allocatable": alloc, "requested": sum(p.gpu.get(res, 0.0) for p in live)}
        for res, (cap, alloc) in node_gpu_capacity(node).items()
    }


def _gpu_rows(obs: Any, verdicts: list[tuple[Any, Verdict]],
              mapping: dict[str, list[tuple[SlimPod, str]]]) -> list[dict[str, Any]]:
    if obs is None:
        return []
    rows = []
    for g, v in verdicts:
        rows.append({
            "index": g.index,
            "uuid": g.uuid,
            "name": g.name,
            "utilization": g.utilization_gpu,
            "memory_used_mib": g.memory_used_mib,
            "memory_total_mib": g.memory_total_mib,
            "temperature_c": g.temperature_c,
            "power_w": g.power_w,
            "processes": sum(1 for p in obs.processes if p.gpu_uuid and p.gpu_uuid == g.uuid),
            "verdict": v.state,
            "pods": [p.ref for p, _ in mapping.get(g.uuid, [])],
        })
    return rows


def _physical_columns(ctx: Context, node: str) -> dict[str, Any]:
    result = (ctx.fact("node.physical") or {}).get(node)
    if result is None:
        return {"ssh": "not checked"}
    if isinstance(result, NodeProbeError):
        return {"ssh": result.reason}
    return {
        "ssh": "ok",
        "kubelet": result.kubelet,
        "driver": result.driver_version,
        "cuda": result.cuda_version,
        "driver_path": result.driver_path,
        "notes": list(result.notes[:10]) + ([result.checkpoint_error] if result.checkpoint_error else []),
    }


@check("node.table", needs=("kube.nodes", "kube.node_pods", "qgpu.components", "node.physical"))
def table(ctx: Context) -> None:
    """One row per GPU node; NODE_NOT_FOUND, NODE_NOT_READY and NODE_CORDONED."""
    all_nodes: dict[str, Obj] = ctx.fact("kube.nodes") or {}
    by_node: dict[str, list[SlimPod]] = ctx.fact("kube.node_pods") or {}
    missing = [n for n in ctx.inv.nodes if n not in all_nodes]
    for name in missing:
        known = sorted(all_nodes)
        ctx.emit("NODE_NOT_FOUND", node=name, nodes=", ".join(known[:20]) + (" …" if len(known) > 20 else ""),
                 rank=0)
    names = gpu_node_names(ctx)
    observed, verdicts, mapping = observations(ctx), card_verdicts(ctx), card_pods(ctx)
    if not names and not missing:
        ctx.skip("node-status", "no node reports a GPU resource in its capacity")
    for name in names:
        node = all_nodes[name]
        pods = by_node.get(name, [])
        ready, reason = _ready(node)
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        row: dict[str, Any] = {
            "node": name,
            "ready": ready,
            "cordoned": cordoned,
            "taints": _taints(node),
            "logical": _logical(node, pods),
            **_physical_columns(ctx, name),
            "gpus": _gpu_rows(observed.get(name), verdicts.get(name, []), mapping.get(name, {})),
            "pods": [_pod_line(p) for p in pods if p.gpu],
            "components": _components(ctx, name, pods),
        }
        ctx.report.nodes.append(row)
        if not ready:
            evidence = [f"{name}: Ready condition: {reason}"]
            offers = None
            kubelet = row.get("kubelet")
            if kubelet:
                evidence.append(f"{name}: systemctl is-active kubelet over SSH: {kubelet}")
            if kubelet and kubelet != "active":
                offers = [Remediation("kubelet.restart", {"node": name},
                                      f"Cordon {name}, restart kubelet, wait for Ready, uncordon")]
            ctx.emit("NODE_NOT_READY", node=name, reason=reason, evidence=evidence, remediations=offers)
        if cordoned:
            taints = ", ".join(row["taints"]) or "none"
            ctx.emit("NODE_CORDONED", node=name,
                     evidence=[f"{name}: spec.unschedulable is true; taints: {taints}"],
                     remediations=[Remediation("node.uncordon", {"node": name}, f"Uncordon {name}")])


# ------------------------------------------------------------------------------------- qGPU


def _visible_devices(env: dict[str, str]) -> list[str]:
    value = env.get("NVIDIA_VISIBLE_DEVICES", "")
    return [v.strip() for v in value.split(",") if v.strip() and v.strip() not in ("all", "none", "void")]


def _match_card(ident: str, gpus: list[Any]) -> Any | None:
    """The card a NVIDIA_VISIBLE_DEVICES item names: exact UUID, index, or a unique UUID prefix."""
    exact = [g for g in gpus if g.uuid == ident or (ident.isdigit() and g.index == int(ident))]
    if exact:
        return exact[0]
    prefixed = [g for g in gpus if g.uuid and g.uuid.startswith(ident) and len(ident) >= 8]
    return prefixed[0] if len(prefixed) == 1 else None


def _checkpoint_cards(obs: Any, uid: str) -> list[Any]:
    """Cards the kubelet checkpoint gives a pod: NVIDIA_VISIBLE_DEVICES of its allocation, or
    device IDs that are card UUIDs (the NVIDIA device plugin's IDs)."""
    entries = obs.checkpoint.entries if obs.checkpoint is not None else []
    cards = []
    for e in entries:
        if e.pod_uid != uid:
            continue
        cards += [c for i in _visible_devices(e.alloc_env) if (c := _match_card(i, obs.gpus))]
        cards += [g for g in obs.gpus if g.uuid and g.uuid in e.device_ids]
    return list({c.uuid: c for c in cards}.values())


def card_pods(ctx: Context) -> dict[str, dict[str, list[tuple[SlimPod, str]]]]:
    """node -> card UUID -> [(live GPU pod, how the card was found)].

    The API does not say which card a pod (least of all a qGPU slice) landed on. First choice:
    the kubelet checkpoint's entry for the pod's UID. Fallback, for qGPU only: when a node has
    exactly one running qGPU pod left unplaced and exactly one card with processes, that pod is
    taken to be on that card.
    """
    by_node: dict[str, list[SlimPod]] = ctx.fact("kube.node_pods") or {}
    out: dict[str, dict[str, list[tuple[SlimPod, str]]]] = {}
    for node, obs in observations(ctx).items():
        placed: dict[str, list[tuple[SlimPod, str]]] = {}
        unplaced = []
        for p in (p for p in by_node.get(node, []) if p.live and p.gpu):
            cards = _checkpoint_cards(obs, p.uid)
            for c in cards:
                placed.setdefault(c.uuid, []).append((p, FROM_CHECKPOINT))
            if not cards and p.phase == "Running" and not p.terminating and p.gpu.get(QGPU_CORE):
                unplaced.append(p)
        active = [g for g in obs.gpus if any(q.gpu_uuid == g.uuid for q in obs.processes)]
        if len(unplaced) == 1 and len(active) == 1:
            placed.setdefault(active[0].uuid, []).append((unplaced[0], INFERRED))
        out[node] = placed
    return out


@check("qgpu.over_quota", needs=("node.physical", "kube.node_pods"), tables=("qgpu_quota",))
def over_quota(ctx: Context) -> None:
    """QGPU_CORE_OVER_QUOTA (info) when a card's utilisation exceeds its pods' core quota within the float."""
    rows = ctx.tables.get("qgpu_quota") or [{}]
    try:
        float_points = float(rows[0].get("float_points", 6))
    except (TypeError, ValueError):
        float_points = 6.0
    observed = observations(ctx)
    for node, cards in sorted(card_pods(ctx).items()):
        gpus = {g.uuid: g for g in observed[node].gpus}
        for uuid, placed in sorted(cards.items()):
            holders = [(p, how) for p, how in placed
                       if p.phase == "Running" and not p.terminating and p.gpu.get(QGPU_CORE)]
            g = gpus.get(uuid)
            util = g.utilization_gpu if g is not None else None
            quota = sum(p.gpu.get(QGPU_CORE, 0.0) for p, _ in holders)
            if g is None or util is None or quota <= 0 or quota >= 100 or util <= quota:
                continue
            over = util - quota
            evidence = [
                f"{node} {card_label(g)}: utilisation {fmt_num(util)}% against qgpu-core quota "
                f"{fmt_num(quota)}% of {', '.join(p.ref for p, _ in holders)} "
                f"(+{fmt_num(over)} points; normal float up to +{fmt_num(float_points)})",
                *sorted({how for _, how in holders}),
            ]
            if over <= float_points:
                ctx.emit("QGPU_CORE_OVER_QUOTA", node=node, pod=", ".join(p.ref for p, _ in holders),
                         utilization=fmt_num(util), core_quota=fmt_num(quota), evidence=evidence)
