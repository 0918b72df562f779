"""Nodes whose gpubot-node agent pod is missing or not Ready (``node_access: agent``), with why."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, node_subject
from bot.engine.facts import Facts
from bot.errors import NodeProbeError


class NodeAgentMissing(TypedDict):
    node: str
    reason: str


NODE_AGENT_MISSING = Code("NODE_AGENT_MISSING", NodeAgentMissing)


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_AGENT_MISSING per node whose agent cannot answer (not scheduled, Pending, crash-looping)."""
    for node, result in sorted(facts.node_readings.items()):
        if isinstance(result, NodeProbeError) and result.reason == "agent-missing":
            yield NODE_AGENT_MISSING.detect(
                node_subject(node),
                {
                    "node": node,
                    "reason": result.detail,
                },
                evidence=[result.user_message],
            )


CHECK = Check(name="node.agent", reads=("node_readings",), emits=(NODE_AGENT_MISSING,), run=run)
