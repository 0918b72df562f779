"""Node actions without SSH: exec the write commands into the node's ``gpubot-actuator`` pod.

With ``node_access: agent`` there is no SSH key. The remediation component installs a separate,
privileged ``gpubot-actuator`` DaemonSet (hostPID); ``ActuatorChannel`` execs each command of a
node action into that node's pod as ``nsenter -t 1 -m -u -i -n -- <command>`` (an argv, no
shell), so it runs in the host's namespaces exactly as over SSH. The read-only ``gpubot-node``
agent never runs a write: it has no privilege to, and keeping the two apart means a cluster
without the remediation component has nothing on its nodes that could change them.

The actuator's allow-list is its own and strict: the fixed write commands of
``bot.actions.node_exec`` (``systemctl stop|start|restart|is-active kubelet``), the one generated
checkpoint ``mv`` and the checkpoint read for the precondition; each call must also be in the
list its caller passes, as over SSH. The pod is found through the API (label and
``spec.nodeName``); a node without a Ready one (the component not installed, the pod not
scheduled, Pending, crash-looping) raises ``ActuatorUnavailable`` before anything is sent, with
why in one line. Each command is its own exec stream: a stream that closes before the exit status
is ``AnswerLost`` (the outcome is unknown; ``NodeShell`` asks a repeatable command once more, on a
fresh exec).

This module must never build a command from a parameter, a node name or user text, and never
exec into any pod but the actuator of the node it acts on.
"""

from __future__ import annotations

from typing import Any

from bot.actions.node_exec import WRITE_COMMANDS, AnswerLost, is_checkpoint_move
from bot.errors import ActionError, GpubotError, KubeApiError
from bot.kube.objects import meta_of
from bot.probes.exec import ExecStream
from bot.probes.kube import KubeReads
from bot.probes.kube_client import new_api_client
from bot.probes.node_agent import (
    ACTUATOR_CONTAINER,
    ACTUATOR_NAME,
    ACTUATOR_SELECTOR,
    NSENTER,
    AgentState,
    find_agents,
)
from bot.probes.ssh import CAT_CHECKPOINT, MAX_OUTPUT_BYTES, CommandResult
from bot.settings import ClusterConfig

#: the fixed commands the actuator runs; the checkpoint ``mv`` is matched by ``actuator_allows``
ACTUATOR_COMMANDS: frozenset[str] = WRITE_COMMANDS | {CAT_CHECKPOINT}
_INSTALLED_BY = "the remediation component"


def actuator_allows(command: str) -> bool:
    """Whether ``command`` is on the actuator's own allow-list (see the module docstring)."""
    return command in ACTUATOR_COMMANDS or is_checkpoint_move(command)


def actuator_argv(command: str) -> list[str]:
    """The exec argv for an allowed ``command``; ``ValueError`` for any other."""
    if not actuator_allows(command):
        raise ValueError(f"command not in the actuator allow-list: {command!r}")
    return [*NSENTER, *command.split(" ")]


class ActuatorUnavailable(ActionError):
    """The node has no actuator pod that can run a command; nothing was sent."""

    def __init__(self, node: str, reason: str) -> None:
        super().__init__(f"no {ACTUATOR_NAME} pod can act on node {node}: {reason}")
        self.node = node
        self.reason = reason


async def find_actuator(kube: KubeReads, namespace: str, node: str, node_obj: dict[str, Any] | None) -> AgentState:
    """The node's actuator pod, or why it has none that answers (as ``find_agents`` says for the agent)."""
    pods = await kube.list_pods(namespace, label_selector=ACTUATOR_SELECTOR, field_selector=f"spec.nodeName={node}")
    daemonsets: list[dict[str, Any]] = []
    if not pods:
        # only to say why: no DaemonSet (not installed) or one whose pod cannot land here
        daemonsets = [
            d
            for d in await kube.list_daemonsets(label_selector=ACTUATOR_SELECTOR)
            if meta_of(d).get("namespace") == namespace
        ]
    found = find_agents({node: node_obj}, pods, daemonsets, name=ACTUATOR_NAME, installed_by=_INSTALLED_BY)
    return found[node]


class ActuatorChannel:
    """Exec into one node's actuator pod, one exec stream per command (a ``NodeChannel``)."""

    via = "actuator"

    def __init__(
        self,
        kube: KubeReads,
        cluster: ClusterConfig,
        namespace: str,
        node: str,
        node_obj: dict[str, Any] | None,
        *,
        command_timeout: float,
    ) -> None:
        self.kube = kube
        self.cluster = cluster
        self.namespace = namespace
        self.node = node
        self.node_obj = node_obj
        self.command_timeout = command_timeout
        self.pod = ""
        self.link = f"the exec stream to the {ACTUATOR_NAME} pod on {node}"
        self._exec: ExecStream | None = None

    async def open(self) -> None:
        if self.pod:
            return
        try:
            state = await find_actuator(self.kube, self.namespace, self.node, self.node_obj)
        except GpubotError as exc:
            why = exc.user_message
            raise ActionError(f"cannot look up the {ACTUATOR_NAME} pod of node {self.node}: {why}") from None
        if not state.ready:
            raise ActuatorUnavailable(self.node, state.reason)
        if self._exec is None:
            # a connection of its own: the exec stream patches the client it runs on
            self._exec = ExecStream(new_api_client(self.cluster), timeout=self.command_timeout)
        self.pod = state.pod
        self.link = f"the exec stream to {self.namespace}/{self.pod} on {self.node}"

    async def run(self, command: str, allowed: frozenset[str]) -> CommandResult:
        if command not in allowed:
            raise ValueError(f"command not in the allow-list: {command!r}")
        argv = actuator_argv(command)
        await self.open()
        assert self._exec is not None
        try:
            out = await self._exec.stream_exec(
                self.namespace, self.pod, ACTUATOR_CONTAINER, argv, timeout=self.command_timeout
            )
        except KubeApiError as exc:
            raise self._refused(command, exc) from None
        if out.timed_out:
            raise ActionError(
                f"`{command}`: no exit status from {self.namespace}/{self.pod} within "
                f"{self.command_timeout:g}s; its outcome is unknown"
            )
        if out.code is None:
            raise AnswerLost(command)
        return CommandResult(out.stdout[:MAX_OUTPUT_BYTES], out.stderr[:MAX_OUTPUT_BYTES], out.code)

    def _refused(self, command: str, exc: KubeApiError) -> ActionError:
        where = f"{self.namespace}/{self.pod}"
        if exc.status in (401, 403):
            return ActionError(
                f"`{command}`: exec into {where} refused ({exc.status}): the bot may not exec into its "
                f"actuator (pods/exec in namespace {self.namespace})"
            )
        if exc.status is None and "timed out" in exc.user_message:
            return ActionError(f"`{command}`: {exc.user_message}; its outcome is unknown")
        return ActionError(f"`{command}`: {exc.user_message}")

    def drop(self) -> None:
        # each command is its own stream; look the pod up again (it may have been replaced)
        self.pod = ""

    async def close(self) -> None:
        ex, self._exec = self._exec, None
        if ex is not None:
            ex.api_client.close()
