"""Candidate nodes that are not Ready cannot take the pod, whatever the message says about them."""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, node_subject
from bot.engine.checks.node_conditions import NODE_NOT_READY
from bot.engine.facts import Facts


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_NOT_READY per candidate; role ``only_candidate`` when it is the pod's only option."""
    if facts.pending_pod is None:
        return
    candidates = facts.candidates
    for name, node in sorted(candidates.items()):
        conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
        ready = conditions.get("Ready") or {}
        if ready.get("status") == "True":
            continue
        reason = str(ready.get("reason") or "no Ready condition")
        yield NODE_NOT_READY.detect(
            node_subject(name),
            {
                "node": name,
                "reason": reason,
            },
            role="only_candidate" if len(candidates) == 1 else "candidate",
            evidence=[f"{name}: Ready={ready.get('status', 'missing')} {reason}: {ready.get('message', '')}".strip()],
        )


CHECK = Check(name="sched.node_health", reads=("pending_pod", "candidates"), emits=(NODE_NOT_READY,), run=run)
