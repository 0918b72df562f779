"""Nodes whose physical truth could not be read, with the reason (refused, timeout, auth, host key)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.facts import Facts
from bot.errors import NodeProbeError


class NodeUnreachable(TypedDict):
    node: str
    reason: str
    via: str
    #: the read went over SSH (else by exec into the agent): the next steps differ
    over_ssh: bool


NODE_UNREACHABLE = Code("NODE_UNREACHABLE", NodeUnreachable)


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_UNREACHABLE per node."""
    for node, result in sorted(facts.node_readings.items()):
        # a node without a working agent pod is NODE_AGENT_MISSING (node_agent), not unreachable
        if isinstance(result, NodeProbeError) and result.reason != "agent-missing":
            over_ssh = result.via == "ssh"
            yield NODE_UNREACHABLE.detect(
                node_subject(node),
                {
                    "node": node,
                    "reason": result.reason,
                    "via": "SSH" if over_ssh else "exec into its gpubot-node agent",
                    "over_ssh": over_ssh,
                },
                evidence=[result.user_message],
            )


CHECK = Check(name="node.reachability", reads=("node_readings",), emits=(NODE_UNREACHABLE,), run=run)
