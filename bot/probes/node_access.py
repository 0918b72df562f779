"""Which transport node reads take when the setting ``node_access`` is ``auto`` (the default).

``auto`` means: the ``gpubot-node`` agent when its pods exist in gpubot's namespace (the chart
installs them), SSH when an SSH key is configured, otherwise no node reads at all, said in one
line that names both ways to turn them on. The CLI and the chart thus share one default that
does the right thing on a cluster with the chart, on a lab with SSH keys, and on a laptop with
only a kubeconfig, where the old SSH default failed every node with a host-key error.

The decision costs one label-selected list of pods in one namespace (the pods it found go on to
the agent transport, which would otherwise list them again) and is kept per cluster
for the life of the process (a one-shot command decides once). Only a found agent is kept for
good: "no agent" is asked again after ``RECHECK_S``, since the long-running bot usually starts
at the same moment as the DaemonSet whose pods it is looking for. Read-only, like every probe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Literal

from bot.errors import GpubotError
from bot.kube.objects import Obj
from bot.probes.kube import KubeReads
from bot.probes.node_agent import AGENT_NAME, AGENT_SELECTOR
from bot.settings import ClusterConfig, Settings

#: what a decision comes to: the two transports, or no node reads
Transport = Literal["agent", "ssh", "none"]
#: seconds before a decision without an agent is made again (the long-running bot)
RECHECK_S = 60.0


@dataclass(frozen=True)
class Decision:
    """How this process reads a cluster's nodes, and the one line that says why."""

    transport: Transport
    #: why (shown as the skipped reason when ``transport`` is "none")
    why: str = ""
    #: the agent pods this decision was just made from (None for a kept decision): the agent
    #: transport takes its agents' states from them instead of listing the same pods again, one
    #: round trip to the API server fewer before the first node read
    agent_pods: tuple[Obj, ...] | None = field(default=None, compare=False, repr=False)


#: (cluster name, kubeconfig, context, namespace) -> (decision, monotonic time it stops holding)
_DECIDED: dict[tuple[str, str, str, str], tuple[Decision, float]] = {}


def ssh_configured(settings: Settings, cluster: ClusterConfig) -> bool:
    """An SSH key is set for ``cluster`` (its own, or the global one)."""
    return bool(cluster.ssh_key_path or settings.ssh_key_path)


def no_node_reads(settings: Settings) -> str:
    """The one line said when ``auto`` finds neither transport: what was looked for, and how to
    turn node reads on."""
    return (
        f"node reads are off: no {AGENT_NAME} agent pods in namespace {settings.namespace} and no SSH "
        f"key configured; install the chart's node agent (nodeAgent.enabled), or set ssh_key_path "
        f"with --node-access ssh"
    )


async def decide(settings: Settings, cluster: ClusterConfig, kube: KubeReads) -> Decision:
    """The transport for ``cluster``: the configured one, or for ``auto`` what is there (cached)."""
    if settings.node_access != "auto":
        return Decision(settings.node_access)
    key = (cluster.name, cluster.kubeconfig, cluster.context, settings.namespace)
    cached = _DECIDED.get(key)
    if cached is not None and time.monotonic() < cached[1]:
        return cached[0]
    try:
        agents = await kube.list_pods(settings.namespace, label_selector=AGENT_SELECTOR)
    except GpubotError as exc:
        # cannot tell: SSH when it is configured, else the agent, whose read will say what failed
        fallback: Transport = "ssh" if ssh_configured(settings, cluster) else "agent"
        return Decision(fallback, f"cannot list the {AGENT_NAME} agent pods: {exc.user_message}")
    if agents:
        decision, until = Decision("agent"), float("inf")
    else:
        transport: Transport = "ssh" if ssh_configured(settings, cluster) else "none"
        decision, until = Decision(transport, no_node_reads(settings)), time.monotonic() + RECHECK_S
    _DECIDED[key] = (decision, until)  # kept without the pods: a later read lists them afresh
    return replace(decision, agent_pods=tuple(agents))


def forget() -> None:
    """Drop every cached decision (tests; a settings reload)."""
    _DECIDED.clear()
