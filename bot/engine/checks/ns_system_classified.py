"""TCE's System-vs-Tenant trap: a namespace with only the default label is treated as System, and
qGPU pods there are not scheduled. Diffed against a namespace where GPU pods do run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import asks_qgpu
from bot.engine.checks._qgpu import DEFAULT_NS_LABEL, fmt_labels, labels, policy_on_nodes
from bot.engine.facts import Facts, per_cluster


class NsSystemClassified(TypedDict):
    namespace: str
    good_namespace: str
    copy_from: str
    count: int
    missing_labels: str


NS_SYSTEM_CLASSIFIED = Code("NS_SYSTEM_CLASSIFIED", NsSystemClassified)

#: namespaces Kubernetes itself creates; they are System by design
BUILTIN_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", "default"}


@per_cluster("node_pods")
def _running_gpu_pods(facts: Facts) -> dict[str, int]:
    """How many running GPU pods each namespace has on the GPU nodes."""
    counts: dict[str, int] = {}
    for pods in facts.node_pods.values():
        for p in pods:
            if p.phase == "Running" and p.gpu:
                counts[p.namespace] = counts.get(p.namespace, 0) + 1
    return counts


def _working_namespace(facts: Facts, *, exclude: str) -> str:
    """The namespace with the most running GPU pods, other than the target's."""
    counts = {n: c for n, c in _running_gpu_pods(facts).items() if n != exclude}
    return max(sorted(counts), key=lambda n: counts[n]) if counts else ""


def run(facts: Facts) -> Iterator[Detection]:
    """NS_SYSTEM_CLASSIFIED with the labels to copy from a working namespace."""
    pod, t = facts.pod, facts.target
    if pod is None or not asks_qgpu(pod) or t.namespace in BUILTIN_NAMESPACES:
        return
    if policy_on_nodes(facts):
        return  # TKE style (policy on the node pool): the TCE System/Tenant split does not apply
    mine = labels(facts.namespaces.get(t.namespace))
    if set(mine) - {DEFAULT_NS_LABEL}:
        return
    good = _working_namespace(facts, exclude=t.namespace)
    good_labels = labels(facts.namespaces.get(good)) if good else {}
    missing = {k: v for k, v in good_labels.items() if k != DEFAULT_NS_LABEL and k not in mine}
    evidence = [f"{t.namespace}: {fmt_labels(mine)}"]
    if good:
        evidence.append(f"{good} (GPU pods run here): {fmt_labels(good_labels)}")
        evidence += [f"+ {k}={v}" for k, v in sorted(missing.items())]
    yield NS_SYSTEM_CLASSIFIED.detect(
        f"namespace/{t.namespace}",
        {
            "namespace": t.namespace,
            "good_namespace": good or "(none found)",
            "copy_from": good if missing else "",
            "count": len(missing),
            "missing_labels": ", ".join(f"{k}={v}" for k, v in sorted(missing.items())) or "(unknown)",
        },
        evidence=evidence,
    )


CHECK = Check(
    name="ns.system_classified",
    reads=("target", "pod", "nodes", "namespaces", "node_pods"),
    emits=(NS_SYSTEM_CLASSIFIED,),
    run=run,
)
