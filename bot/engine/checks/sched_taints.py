"""Untolerated taints on the nodes that could otherwise run the pod, with the toleration to add."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.scheduling import NOT_READY_TAINTS
from bot.kube.taints import toleration_yaml, untolerated_taints


def _tolerations(pod: dict[str, Any]) -> str:
    tols = (pod.get("spec") or {}).get("tolerations") or []
    parts = [f"{t.get('key', '*')}:{t.get('operator', 'Equal')}:{t.get('effect', '*')}" for t in tols]
    return ", ".join(parts) or "none"


def run(facts: Facts) -> Iterator[Detection]:
    """A cause only when every candidate node is blocked by some taint."""
    pod = facts.pending_pod
    if pod is None:
        return
    candidates = facts.candidates
    blocked: dict[str, list[str]] = {}
    first: dict[str, dict[str, Any]] = {}
    for name, node in sorted(candidates.items()):
        for taint in untolerated_taints(pod, node):
            if taint.get("key") == "node.kubernetes.io/unschedulable" or taint.get("key") in NOT_READY_TAINTS:
                continue  # a cordon or node health: a toleration is not the fix (their own checks)
            text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
            blocked.setdefault(text, []).append(name)
            first.setdefault(text, taint)
    if not blocked or {n for ns in blocked.values() for n in ns} != set(candidates):
        return
    for text, names in blocked.items():
        yield detect(
            "SCHED_UNTOLERATED_TAINT",
            pod_subject(pod),
            pod=pod_ref(pod),
            taint=text,
            nodes=", ".join(names),
            toleration=toleration_yaml(first[text]),
            evidence=[f"{n}: taint {text}" for n in names] + ["pod tolerations: " + _tolerations(pod)],
        )


CHECK = Check(name="sched.taints", reads=("pending_pod", "candidates"), emits=("SCHED_UNTOLERATED_TAINT",), run=run)
