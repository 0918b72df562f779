"""Read GPU nodes through the Kubernetes API: exec the node read commands into the node's agent pod.

The ``gpubot-node`` DaemonSet runs one idle, unprivileged pod per GPU node with the host paths the
reads need mounted read-only. ``AgentTransport`` execs the very commands SSH would send
(``bot.probes.ssh.READ_COMMANDS``, through ``PodExec.run_read``) into that pod, so the readings,
deadlines and failure reasons are those of SSH. ``find_agents`` maps each node to its agent pod,
or to why there is none that can answer (not scheduled and why, Pending, crash-looping, not Ready).

It also execs the agent's own reads (``bot.probes.agent_reads.AGENT_READ_COMMANDS``: the host's
journal files and text logs, nvidia-smi from the host's driver directories) where the plain read
failed. This module must never run anything but those two lists, and never exec into any other pod.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.errors import GpubotError, KubeApiError, NodeProbeError
from bot.kube.objects import Obj, labels_of, meta_of, name_of
from bot.kube.pod_status import crash_loop_status, running_ready
from bot.probes.node import CHANNELS_PER_NODE, NodeObservation, RunReads, each_command, observe_with
from bot.probes.ssh import CommandResult

#: the label the chart puts on agent pods (``app.kubernetes.io/name``) and their container's name
AGENT_NAME = "gpubot-node"
AGENT_SELECTOR = f"app.kubernetes.io/name={AGENT_NAME}"
AGENT_CONTAINER = "agent"
#: the remediation component's privileged per-node pod: only ``bot.actions.actuator`` execs into it
#: (named here, beside the agent, so the simulator can serve it without importing the actions)
ACTUATOR_NAME = "gpubot-actuator"
ACTUATOR_SELECTOR = f"app.kubernetes.io/name={ACTUATOR_NAME}"
ACTUATOR_CONTAINER = "actuator"
#: the actuator's argv prefix: enter the host's mount, UTS, IPC and network namespaces of PID 1
NSENTER: tuple[str, ...] = ("nsenter", "-t", "1", "-m", "-u", "-i", "-n", "--")

class NodeExecFn(Protocol):
    """``PodExec.run_read``: one read command in a container, within ``timeout`` seconds."""

    def __call__(
        self, namespace: str, pod: str, container: str, command: str, *, timeout: float | None = None
    ) -> Awaitable[CommandResult]: ...


@dataclass(frozen=True)
class AgentState:
    """One node's agent: the pod to exec into (``ready``), or why the node has none that answers."""

    pod: str = ""
    ready: bool = False
    #: empty when ready; else "not scheduled: ...", "Pending: ...", "crash-looping: ...", ...
    reason: str = ""


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and not tol.get("key"):
            return True
        if tol.get("key") != taint.get("key"):
            continue
        if tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _why_unscheduled(node: Obj | None, template: Obj | None, name: str, installed_by: str) -> str:
    """Which taint or label keeps the DaemonSet's pod off the node, as far as the objects say."""
    if template is None:
        return f"not scheduled: no {name} DaemonSet in the namespace (is {installed_by} installed?)"
    spec = template.get("spec") or {}
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    taints = [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            return f"not scheduled: taint {taint.get('key')}{value}:{taint.get('effect')} is not tolerated"
    labels = labels_of(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return f"not scheduled: the node lacks label {key}={value} (the DaemonSet's nodeSelector)"
    return "not scheduled: the DaemonSet's node affinity does not match this node's labels"


def _pod_state(pod: Obj) -> AgentState:
    name = name_of(pod)
    status = pod.get("status") or {}
    looping = crash_loop_status(pod)
    if looping is not None:
        return AgentState(name, False, f"crash-looping: pod {name}, {looping.get('restartCount', 0)} restarts")
    phase = status.get("phase", "")
    if phase == "Pending":
        why = next(
            (
                str(((cs.get("state") or {}).get("waiting") or {}).get("reason", ""))
                for cs in status.get("containerStatuses") or []
                if (cs.get("state") or {}).get("waiting")
            ),
            "",
        )
        return AgentState(name, False, f"Pending: pod {name}" + (f" ({why})" if why else ""))
    if not running_ready(pod):
        return AgentState(name, False, f"not Ready: pod {name} is {phase or 'in no phase'}")
    return AgentState(name, True)


def find_agents(
    nodes: Mapping[str, Obj | None],
    pods: list[Obj],
    daemonsets: list[Obj],
    *,
    name: str = AGENT_NAME,
    installed_by: str = "the node agent",
) -> dict[str, AgentState]:
    """Each of ``nodes``' agent: from the agent pods (by spec.nodeName) and the agent DaemonSet.

    ``name`` and ``installed_by`` word the reasons for another per-node DaemonSet (the actuator).
    """
    by_node: dict[str, Obj] = {}
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and meta_of(pod).get("deletionTimestamp") is None:
            best = by_node.get(node)
            # a Ready pod wins over a replacement still starting
            if best is None or _pod_state(pod).ready:
                by_node[node] = pod
    template: Obj | None = next(((d.get("spec") or {}).get("template") for d in daemonsets), None)
    out = {}
    for node, node_obj in nodes.items():
        agent = by_node.get(node)
        out[node] = (
            _pod_state(agent)
            if agent is not None
            else AgentState(reason=_why_unscheduled(node_obj, template, name, installed_by))
        )
    return out


class AgentTransport:
    """Exec into each node's ``gpubot-node`` pod through the Kubernetes API (``pods/exec``)."""

    name = "agent"

    def __init__(self, exec_read: NodeExecFn, namespace: str, agents: Mapping[str, AgentState]) -> None:
        self.exec_read = exec_read
        self.namespace = namespace
        self.agents = agents

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        agent = self.agents.get(node) or AgentState(reason="not scheduled: no agent pod found")
        if not agent.ready:
            raise NodeProbeError(node, "agent-missing", agent.reason, via="agent")
        try:
            async with asyncio.timeout(deadline):
                return await observe_with(self._runner(node, agent.pod, deadline), node, agent=True)
        except TimeoutError:
            raise NodeProbeError(node, "timeout", f"no complete answer within {deadline:g}s", via="agent") from None

    def _runner(self, node: str, pod: str, deadline: float) -> RunReads:
        gate = asyncio.Semaphore(CHANNELS_PER_NODE)

        async def one(command: str) -> CommandResult:
            async with gate:
                try:
                    # the exec's own deadline ends its stream with the node's
                    return await self.exec_read(self.namespace, pod, AGENT_CONTAINER, command, timeout=deadline)
                except KubeApiError as exc:
                    raise _translate(node, exc) from None
                except GpubotError as exc:
                    raise NodeProbeError(node, "error", exc.user_message, via="agent") from None

        async def run(commands: list[str]) -> dict[str, CommandResult]:
            return await each_command(one, commands)

        return run


def _translate(node: str, exc: KubeApiError) -> NodeProbeError:
    """The SSH reasons, for an exec: 401/403 is auth (RBAC), a timed-out exec is timeout."""
    text = exc.user_message
    if exc.status in (401, 403):
        return NodeProbeError(node, "auth", f"exec refused ({exc.status}): the bot may not exec into its agent",
                              via="agent")
    if "timed out" in text:
        return NodeProbeError(node, "timeout", text, via="agent")
    return NodeProbeError(node, "error", text, via="agent")
