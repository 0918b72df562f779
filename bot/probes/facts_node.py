"""Registered SSH probe: the physical truth of the nodes in scope, over one connection per node.

Runs only the read allow-list of ``bot.probes.ssh`` through ``bot.probes.node``. A node that does
not answer costs at most the per-node deadline and becomes a skipped entry plus a
``NODE_UNREACHABLE`` finding; the rest of the report stands.
"""

from __future__ import annotations

from typing import Any

from bot.engine.context import Context
from bot.engine.logic.resources import pod_gpu_requests
from bot.errors import NodeProbeError
from bot.probes.facts_kube import TargetFacts, gpu_node_names
from bot.probes.node import observe_nodes, ssh_target_for
from bot.probes.slim import SlimPod
from bot.registry import probe


def _allocated_share(pods: list[SlimPod]) -> float:
    return sum(sum(p.gpu.values()) for p in pods if p.live)


def nodes_in_scope(ctx: Context) -> list[str]:
    """Which nodes to look at physically.

    node-status: the asked or all GPU nodes. A running pod: its own node (the "host nvidia-smi
    shows no load" trap is about looking at the wrong node). A pending GPU pod: the GPU nodes that
    offer what it asks, most allocated first, at most ``ssh_concurrency`` of them.
    """
    if ctx.inv.command == "node-status":
        return gpu_node_names(ctx)
    t: TargetFacts | None = ctx.fact("kube.target")
    if t is None or t.pod is None:
        return []
    node = (t.pod.get("spec") or {}).get("nodeName")
    if node:
        return [node]
    wanted = set(pod_gpu_requests(t.pod))
    if not wanted:
        return []
    all_nodes: dict[str, Any] = ctx.fact("kube.nodes") or {}
    candidates = [
        n
        for n in gpu_node_names(ctx)
        if wanted & set(((all_nodes[n].get("status") or {}).get("capacity") or {}).keys())
    ]
    by_node = ctx.fact("kube.node_pods") or {}
    candidates.sort(key=lambda n: -_allocated_share(by_node.get(n, [])))
    limit = ctx.settings.ssh_concurrency
    if len(candidates) > limit:
        ctx.skip(
            "physical checks on some nodes",
            f"looked at the {limit} most allocated of {len(candidates)} candidate nodes",
        )
    return candidates[:limit]


@probe("node.physical", needs=("kube.target", "kube.nodes", "kube.node_pods"))
async def physical(ctx: Context) -> None:
    """nvidia-smi, compute apps, the kubelet checkpoint, /dev/nvidia*, kubelet state, driver."""
    names = nodes_in_scope(ctx)
    all_nodes: dict[str, Any] = ctx.fact("kube.nodes") or {}
    s, c = ctx.settings, ctx.cluster
    targets = {}
    bad: dict[str, NodeProbeError] = {}
    for n in names:
        try:
            targets[n] = ssh_target_for(
                n,
                all_nodes.get(n),
                user=s.ssh_user,
                key_path=c.ssh_key_path or s.ssh_key_path,
                known_hosts=c.ssh_known_hosts or s.ssh_known_hosts,
                overrides=c.ssh_targets,
            )
        except NodeProbeError as exc:  # a misconfigured override costs that node only
            bad[n] = exc
    results: dict[str, Any] = dict(bad)
    results.update(
        await observe_nodes(targets, concurrency=s.ssh_concurrency, deadline=s.ssh_deadline_s, pool=ctx.ssh_pool)
    )
    for node, result in sorted(results.items()):
        if isinstance(result, NodeProbeError):
            ctx.skip(f"physical checks on {node}", f"ssh {result.reason}")
    ctx.facts["node.physical"] = results
