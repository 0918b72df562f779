"""Node reads for a capture: the bot's own node transports, with each command's raw answer kept.

A capture needs what the diagnosis reads (``NodeObservation``, from the same ``observe_with`` and
allow-listed ``READ_COMMANDS``) and a few exact texts the observation only keeps parsed (the
kubelet checkpoint, nvidia-smi's error line). ``Recorder`` wraps a transport's ``RunReads`` to keep
those answers; nothing else is sent, and nothing here can write to a node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.engine.gather.node import agent_states, ssh_targets
from bot.errors import NodeProbeError
from bot.probes.kube import KubeReads
from bot.probes.node import NodeObservation, NodeTransport, RunReads, observe_with
from bot.probes.node import _connect as connect_retrying
from bot.probes.node import _run_all as run_reads
from bot.probes.node_agent import AgentState, AgentTransport, NodeExecFn
from bot.probes.ssh import COMBINED_READ, CommandResult, SshTarget, split_reads
from bot.settings import ClusterConfig, Settings

Obj = dict[str, Any]


@dataclass
class Recorder:
    """Every read command's result per node, as the transport returned it."""

    raw: dict[str, dict[str, CommandResult]] = field(default_factory=dict)

    def wrap(self, node: str, run: RunReads) -> RunReads:
        async def recording(commands: list[str]) -> dict[str, CommandResult]:
            results = await run(commands)
            raw = self.raw.setdefault(node, {})
            for command, result in results.items():
                # the one-round-trip read is recorded as the commands it stands for
                parts = split_reads(result.stdout) if command == COMBINED_READ and result.exit_status == 0 else None
                raw.update(parts if parts is not None else {command: result})
            return results

        return recording


class RecordingAgentTransport(AgentTransport):
    """``AgentTransport`` whose per-node runner also records into ``recorder``."""

    def __init__(
        self, exec_read: NodeExecFn, namespace: str, agents: Mapping[str, AgentState], recorder: Recorder
    ) -> None:
        super().__init__(exec_read, namespace, agents)
        self.recorder = recorder

    def _runner(self, node: str, pod: str, deadline: float) -> RunReads:
        return self.recorder.wrap(node, super()._runner(node, pod, deadline))


class RecordingSshTransport:
    """SSH to each node (one connection per node), the read commands only, recorded.

    The connection and the command runner are ``bot.probes.node``'s own (retried connect, at
    most ``CHANNELS_PER_NODE`` channels, ``READ_COMMANDS`` only); only the recording is added.
    """

    name = "ssh"

    def __init__(self, targets: Mapping[str, SshTarget], recorder: Recorder) -> None:
        self.targets = targets
        self.recorder = recorder

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        target = self.targets[node]
        obs: NodeObservation
        try:
            async with asyncio.timeout(deadline):
                # the bot's own connect: retried when the node drops the connection (MaxStartups)
                conn = await connect_retrying(target, timeout=deadline)
                async with conn:

                    async def run(commands: list[str]) -> dict[str, CommandResult]:
                        return await run_reads(conn, node, commands)

                    obs = await observe_with(self.recorder.wrap(node, run), node)
        except TimeoutError:
            raise NodeProbeError(node, "timeout", f"no complete answer within {deadline:g}s") from None
        return obs


async def agent_transport(
    kube: KubeReads, node_exec: NodeExecFn, namespace: str, nodes: Mapping[str, Obj], recorder: Recorder
) -> NodeTransport:
    """The agent transport over the agent pods found now (missing, Pending, crash-looping, …)."""
    return RecordingAgentTransport(node_exec, namespace, await agent_states(kube, namespace, nodes), recorder)


def ssh_transport(
    settings: Settings, cluster: ClusterConfig, nodes: Mapping[str, Obj], recorder: Recorder
) -> tuple[NodeTransport, dict[str, NodeProbeError]]:
    """The SSH transport to ``nodes``, and the nodes whose target is misconfigured."""
    targets, failed = ssh_targets(settings, cluster, nodes)
    return RecordingSshTransport(targets, recorder), failed
