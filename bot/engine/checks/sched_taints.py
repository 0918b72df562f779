"""Untolerated taints on the nodes that could otherwise run the pod, with the toleration to add.

"Could otherwise run it" means the candidates (nodes offering the GPU resources it asks, every
node when it asks none) that also pass its node selector/affinity and its required pod affinity:
a CPU-only pod pinned to a GPU pool, or tied to a GPU pod, is kept out by the GPU nodes' taint
alone even though untainted CPU nodes exist. When no candidate passes those rules, every
candidate is looked at (the selector or affinity finding then explains the rest).

A GPU taint (``nvidia.com/gpu``) on a pod that evidently expects a GPU but requests none is left to
SPEC_NO_GPU_REQUEST: the request is the fix there, and a toleration would be the wrong advice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.affinity import node_matches
from bot.kube.gpu import gpu_expectations
from bot.kube.resources import is_gpu_resource, pod_gpu_requests
from bot.kube.scheduling import NOT_READY_TAINTS
from bot.kube.taints import toleration_yaml, untolerated_taints


class SchedUntoleratedTaint(TypedDict):
    pod: str
    taint: str
    nodes: str
    toleration: str
    fix: str


SCHED_UNTOLERATED_TAINT = Code("SCHED_UNTOLERATED_TAINT", SchedUntoleratedTaint)

#: the first fix, worded for the case: a GPU pool's taint on a pod that asks no GPU has two
TOLERATE = "Add this toleration to the pod template (spec.tolerations)"
BOTH_FIXES = (
    "If the pod must run on these GPU nodes without a card (a cache, proxy or sidecar beside a GPU pod), "
    "add this toleration to its pod template (spec.tolerations); if it needs a GPU, request one instead "
    "(resources.limits, e.g. nvidia.com/gpu: 1), which brings the toleration with it"
)


def _tolerations(pod: dict[str, Any]) -> str:
    tols = (pod.get("spec") or {}).get("tolerations") or []
    parts = [f"{t.get('key', '*')}:{t.get('operator', 'Equal')}:{t.get('effect', '*')}" for t in tols]
    return ", ".join(parts) or "none"


def _eligible(facts: Facts, pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Candidates that pass the pod's node selection and required pod affinity (else all)."""
    candidates = facts.candidates
    affinity = facts.pod_affinity
    eligible = {
        name: node
        for name, node in candidates.items()
        if node_matches(pod, node).ok and (affinity is None or affinity.allows(name))
    }
    return eligible or dict(candidates)


def _gpu_taint_note(pod: dict[str, Any], taint_key: str) -> list[str]:
    """Why a pod without a GPU request does not get the GPU taint's toleration for free."""
    if not is_gpu_resource(taint_key) or pod_gpu_requests(pod):
        return []
    return [
        f"{taint_key} is the taint GPU node pools carry (GKE adds {taint_key}=present:NoSchedule); "
        "the ExtendedResourceToleration admission plugin (on by default in GKE and AKS) adds the "
        "matching toleration only to pods that request that resource, and this pod requests no GPU: "
        "add the toleration if it must run on those nodes without a GPU, or request a GPU if it needs one"
    ]


def run(facts: Facts) -> Iterator[Detection]:
    """A cause only when every node the pod could otherwise use is blocked by some taint."""
    pod = facts.pending_pod
    if pod is None:
        return
    eligible = _eligible(facts, pod)
    blocked: dict[str, list[str]] = {}
    first: dict[str, dict[str, Any]] = {}
    for name, node in sorted(eligible.items()):
        for taint in untolerated_taints(pod, node):
            if taint.get("key") == "node.kubernetes.io/unschedulable" or taint.get("key") in NOT_READY_TAINTS:
                continue  # a cordon or node health: a toleration is not the fix (their own checks)
            text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
            blocked.setdefault(text, []).append(name)
            first.setdefault(text, taint)
    if not blocked or {n for ns in blocked.values() for n in ns} != set(eligible):
        return
    narrowed = len(eligible) < len(facts.candidates)
    # A pod that evidently wants a GPU but requests none: the request is the fix, and it brings the
    # GPU taint's toleration with it (SPEC_NO_GPU_REQUEST says so); a toleration alone is not.
    wants_gpu = not pod_gpu_requests(pod) and bool(gpu_expectations(pod))
    for text, names in blocked.items():
        if wants_gpu and is_gpu_resource(str(first[text].get("key") or "")):
            continue
        evidence = [f"{n}: taint {text}" for n in names] + ["pod tolerations: " + _tolerations(pod)]
        if narrowed:
            others = sorted(set(facts.candidates) - set(eligible))
            evidence.append(
                f"the other node(s) ({', '.join(others[:10])}) fail the pod's node selector or pod affinity, "
                "so these are the only nodes it can use"
            )
        note = _gpu_taint_note(pod, str(first[text].get("key") or ""))
        evidence += note
        yield SCHED_UNTOLERATED_TAINT.detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "taint": text,
                "nodes": ", ".join(names),
                "toleration": toleration_yaml(first[text]),
                "fix": BOTH_FIXES if note else TOLERATE,
            },
            evidence=evidence,
        )


CHECK = Check(
    name="sched.taints",
    reads=("pending_pod", "candidates", "pod_affinity"),
    emits=(SCHED_UNTOLERATED_TAINT,),
    run=run,
)
