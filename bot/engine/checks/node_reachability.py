"""Nodes whose physical truth could not be read, with the reason (refused, timeout, auth, host key)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, detect, node_subject
from bot.engine.facts import Facts
from bot.errors import NodeProbeError


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_UNREACHABLE per node."""
    for node, result in sorted(facts.node_readings.items()):
        if isinstance(result, NodeProbeError):
            yield detect("NODE_UNREACHABLE", node_subject(node), node=node, reason=result.reason,
                         evidence=[result.user_message])


CHECK = Check(name="node.reachability", reads=("node_readings",), emits=("NODE_UNREACHABLE",), run=run)
