"""Loader of the physical truth: nvidia-smi, compute apps, the kubelet checkpoint, /dev/nvidia*,
kubelet state and driver on the nodes in scope, through the read-only node transport: SSH, or
exec into the node's gpubot-node agent pod (setting ``node_access``; ``auto`` is decided once by
``bot.probes.node_access``).

A node that does not answer costs at most the per-node deadline and becomes a skipped entry
(and, through its check, ``NODE_UNREACHABLE``); the rest of the report stands.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bot.engine.cards import EarlyVerdicts
from bot.engine.facts import EARLY_CARD_VERDICTS, EARLY_NODE_ROWS, Facts
from bot.engine.gather.dcgm import dcgm_for_readings
from bot.engine.gather.kubelet import kubelet_from_leases
from bot.engine.gather.sources import Sources
from bot.engine.node_rows import EarlyRows
from bot.engine.per_node import EARLY_PER_NODE, EARLY_WORDS, EarlyParts
from bot.errors import GpubotError, KubeApiError, NodeProbeError
from bot.kube.objects import Obj, meta_of
from bot.kube.resources import pod_gpu_requests
from bot.probes.kube import KubeReads
from bot.probes.node import NodeTransport, SshTransport, observe_many, ssh_target_for
from bot.probes.node_access import decide
from bot.probes.node_agent import AGENT_SELECTOR, AgentState, AgentTransport, find_agents
from bot.probes.slim import SlimPod
from bot.probes.ssh import CommandResult, SshTarget
from bot.report import DEADLINE_SKIP, NODE_READ_SKIP, Unreadable
from bot.settings import ClusterConfig, Settings

#: the longest one dcgm-exporter answer may take (it serves a cached scrape, in milliseconds)
DCGM_TIMEOUT_S = 3.0


def _allocated_share(pods: list[SlimPod]) -> float:
    return sum(sum(p.gpu.values()) for p in pods if p.live)


def physical_scope(facts: Facts) -> list[str]:
    """Which nodes to read physically.

    node-status: the asked or all GPU nodes. A running pod: its own node (the "host nvidia-smi
    shows no load" trap is about looking at the wrong node). A pending GPU pod: the GPU nodes that
    offer what it asks, most allocated first, at most ``ssh_concurrency`` of them. Nodes whose
    kubelet rejected one of the target's pods at admission (a workload's Failed pods) come first.
    """
    candidates = _scope(facts)
    limit = facts.ssh_concurrency if facts.inv.kind else len(candidates)
    if len(candidates) > limit:
        facts.skip(
            f"{NODE_READ_SKIP} some nodes",
            f"looked at the {limit} most allocated of {len(candidates)} candidate nodes",
        )
    return candidates[:limit]


def _scope(facts: Facts) -> list[str]:
    """``physical_scope`` before its cut to ``ssh_concurrency`` candidates of a pending pod."""
    if not facts.inv.kind:
        return facts.scope_nodes
    pod = facts.target.pod
    if pod is None:
        return []
    # nodes whose kubelet rejected the target's pods: the card or the kubelet there is the question
    rejected = sorted({r.node for r in facts.admission_rejected if r.node in facts.nodes})
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return ([str(node)] + [n for n in rejected if n != node])[: max(facts.ssh_concurrency, 1)]
    wanted = set(pod_gpu_requests(pod))
    if not wanted:
        return rejected[: facts.ssh_concurrency]
    candidates = [
        n
        for n in facts.gpu_nodes
        if wanted & set(((facts.nodes[n].get("status") or {}).get("capacity") or {}).keys())
    ]
    candidates.sort(key=lambda n: -_allocated_share(facts.node_pods.get(n, [])))
    return rejected + [n for n in candidates if n not in rejected]


def unread_scope(facts: Facts) -> list[str]:
    """The nodes the readings would have covered, for naming each one when the readings as a
    whole were not taken (cancelled at the deadline, or resting on a fact that could not be
    read). Empty where the scope itself rests on an unread fact: no node is claimed then."""
    rests_on = ("nodes", "components") + (("target", "node_pods") if facts.inv.kind else ())
    if any(name in facts.unreadable or not facts.gathered(name) for name in rests_on):
        return []
    scope = _scope(facts)
    return scope[: facts.ssh_concurrency] if facts.inv.kind else scope


def ssh_targets(
    settings: Settings, cluster: ClusterConfig, nodes: Mapping[str, Any]
) -> tuple[dict[str, SshTarget], dict[str, NodeProbeError]]:
    """Where to SSH for each of ``nodes`` (name -> Node object or None), and the nodes whose
    configured target is unusable (a misconfigured override costs that node only)."""
    targets: dict[str, SshTarget] = {}
    failed: dict[str, NodeProbeError] = {}
    for n, obj in nodes.items():
        try:
            targets[n] = ssh_target_for(
                n,
                obj,
                user=settings.ssh_user,
                key_path=cluster.ssh_key_path or settings.ssh_key_path,
                known_hosts=cluster.ssh_known_hosts or settings.ssh_known_hosts,
                overrides=cluster.ssh_targets,
            )
        except NodeProbeError as exc:
            failed[n] = exc
    return targets, failed


async def agent_states(
    kube: KubeReads, namespace: str, nodes: Mapping[str, Any], pods: Sequence[Obj] | None = None
) -> dict[str, AgentState]:
    """Each node's gpubot-node agent in ``namespace`` (``find_agents``); GpubotError if unlistable.

    ``pods``: the agent pods just listed (``Decision.agent_pods``), not asked for again; else they
    are listed beside the DaemonSets, both at once (one round trip, not two, on a distant API)."""
    agent_daemonsets = kube.list_daemonsets(label_selector=AGENT_SELECTOR)
    if pods is None:
        listed, found = await asyncio.gather(kube.list_pods(namespace, label_selector=AGENT_SELECTOR),
                                             agent_daemonsets)
    else:
        listed, found = list(pods), await agent_daemonsets
    daemonsets = [d for d in found if meta_of(d).get("namespace") == namespace]
    return find_agents(nodes, listed, daemonsets)


def agents_unlisted(names: Iterable[str], exc: GpubotError) -> dict[str, NodeProbeError]:
    """Every node unreadable through the agent because the agents could not even be listed."""
    why = f"cannot list the node agents: {exc.user_message}"
    return {n: NodeProbeError(n, "error", why, via="agent") for n in names}


async def _transport(
    facts: Facts, src: Sources, names: list[str]
) -> tuple[NodeTransport | None, dict[str, Any]]:
    """The transport (``node_access``, decided once for ``auto``), and the nodes it cannot read
    at all (value: the error). None: nothing to read, or no node reads (``auto`` found neither
    agent nor SSH key), recorded as one skipped line that says how to turn them on."""
    s, c = src.settings, src.cluster
    nodes = {n: facts.nodes.get(n) for n in names}
    if not names:
        return None, {}
    decision = await decide(s, c, src.kube)
    if decision.transport == "none":
        facts.skip(f"{NODE_READ_SKIP} {len(names)} node(s)", decision.why)
        return None, {}
    if decision.transport == "agent":
        if src.node_exec is None:
            return AgentTransport(_no_exec, s.namespace, {}), {
                n: NodeProbeError(n, "error", "exec is not available here", via="agent") for n in names
            }
        try:
            agents = await agent_states(src.kube, s.namespace, nodes, decision.agent_pods)
        except GpubotError as exc:
            # the readings rest on a read that failed: say so, claim nothing from them
            failure = Unreadable.of(exc) if isinstance(exc, KubeApiError) else None
            facts.cannot_read("node_readings", failure or Unreadable("the node agents", "failed", exc.user_message))
            return AgentTransport(src.node_exec, s.namespace, {}), agents_unlisted(names, exc)
        return AgentTransport(src.node_exec, s.namespace, agents), {}
    targets, failed = ssh_targets(s, c, nodes)
    return SshTransport(targets, pool=src.ssh_pool), dict(failed)


def _likely_slow(transport: NodeTransport, slow: set[str] | None) -> list[str]:
    """The nodes to start first in the long-running bot: those whose last read timed out, and
    over SSH those it holds no connection to (a fresh connect is the slow part of a read and a
    silent node's costs the whole deadline). The one-shot CLI reads everything afresh: no order."""
    slow = slow or set()
    first = sorted(slow)
    if isinstance(transport, SshTransport) and transport.pool is not None:
        pool = transport.pool
        first += [n for n, target in transport.targets.items() if not pool.holds(target) and n not in slow]
    return first


async def _no_exec(
    namespace: str, pod: str, container: str, command: str, *, timeout: float | None = None
) -> CommandResult:
    raise NodeProbeError(pod, "error", "exec is not available here", via="agent")


def _counting(early: EarlyVerdicts, rows: EarlyRows | None, parts: EarlyParts | None, src: Sources,
              total: int) -> Callable[[str, Any], None]:
    """``early.answered`` (and the table's ``rows.answered``, the checks' per-node ``parts``),
    also telling the progress line how many of ``total`` nodes answered."""
    done = 0
    src.progress(f"reading {total} node(s) ({src.settings.node_access})")

    def answered(node: str, result: Any) -> None:
        nonlocal done
        done += 1
        early.answered(node, result)
        if rows is not None:
            rows.answered(node, early.done.get(node))
        if parts is not None:
            parts.answered(node, result)
        src.progress(f"reading nodes: {done} of {total} answered")

    return answered


async def readings(facts: Facts, src: Sources) -> None:
    names = physical_scope(facts)
    s = src.settings
    transport, results = await _transport(facts, src, names)
    if transport is None:
        facts.put("node_readings", {})
        return
    todo = [n for n in names if n not in results]
    early = EarlyVerdicts(facts.table("working_signals"), facts.table("working_profiles"), facts.node_pods)
    # beside the fact from now on, filled as the nodes answer: the per-node parts read the cards' verdicts
    facts.put(EARLY_CARD_VERDICTS, early.done)
    rows = EarlyRows(facts) if facts.node_table else None
    parts = EarlyParts(facts, facts.early_parts) if facts.early_parts else None
    answered = _counting(early, rows, parts, src, len(todo))
    if src.node_memo is not None:
        transport = src.node_memo.wrap(transport)
    results.update(
        await observe_many(
            transport,
            todo,
            concurrency=s.ssh_concurrency,
            deadline=s.ssh_deadline_s,
            until=facts.deadline,
            first=_likely_slow(transport, src.slow_nodes),
            answered=answered,
        )
    )
    await kubelet_from_leases(src.kube, facts.nodes, results)
    left = facts.deadline - time.monotonic() if facts.deadline else DCGM_TIMEOUT_S
    if s.dcgm_exporter:
        await dcgm_for_readings(facts.components, results,
                                timeout=max(0.1, min(s.ssh_deadline_s, DCGM_TIMEOUT_S, left)))
    if src.slow_nodes is not None:
        for node, result in results.items():
            if isinstance(result, NodeProbeError) and result.reason == "timeout":
                src.slow_nodes.add(node)
            else:
                src.slow_nodes.discard(node)
    late = {n for n, r in results.items() if isinstance(r, NodeProbeError) and r.reason == "deadline"}
    for node, result in sorted(results.items()):
        # every unread node by name, with its reason (the views group them by reason); a missing
        # agent is its own finding (NODE_AGENT_MISSING), which says why
        if node in late:
            facts.skip(f"{NODE_READ_SKIP} {node}", DEADLINE_SKIP)
        elif isinstance(result, NodeProbeError) and result.reason != "agent-missing":
            facts.skip(f"{NODE_READ_SKIP} {node}", f"{result.via} {result.reason}")
    facts.put("node_readings", {n: r for n, r in results.items() if n not in late})
    if rows is not None:
        facts.put(EARLY_NODE_ROWS, rows.done)
    if parts is not None:
        facts.put(EARLY_PER_NODE, parts.done)
        facts.put(EARLY_WORDS, parts.words)
