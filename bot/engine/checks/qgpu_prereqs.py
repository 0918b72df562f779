"""The three qGPU prerequisites, only for pods that ask for qGPU: the operator runs, nodes report
qGPU capacity, and the scheduling policy label is set (on the namespace, or TKE-style on nodes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import QGPU_CORE, asks_qgpu, pod_ref
from bot.engine.checks._qgpu import POLICIES, POLICY_LABEL, fmt_labels, is_qgpu, labels, qgpu_nodes
from bot.engine.facts import Facts
from bot.kube.objects import name_of


class QgpuNsPolicyMissing(TypedDict):
    namespace: str
    pod: str
    label: str


QGPU_NS_POLICY_MISSING = Code("QGPU_NS_POLICY_MISSING", QgpuNsPolicyMissing)


class QgpuOperatorMissing(TypedDict):
    pod: str


QGPU_OPERATOR_MISSING = Code("QGPU_OPERATOR_MISSING", QgpuOperatorMissing)


class QgpuNodeNoCapacity(TypedDict):
    pod: str


QGPU_NODE_NO_CAPACITY = Code("QGPU_NODE_NO_CAPACITY", QgpuNodeNoCapacity)


class QgpuNsPolicyInvalid(TypedDict):
    namespace: str
    value: str
    label: str
    on_namespace: bool


QGPU_NS_POLICY_INVALID = Code("QGPU_NS_POLICY_INVALID", QgpuNsPolicyInvalid)


def run(facts: Facts) -> Iterator[Detection]:
    """QGPU_OPERATOR_MISSING, QGPU_NODE_NO_CAPACITY, QGPU_NS_POLICY_INVALID / _MISSING."""
    pod, t = facts.pod, facts.target
    if pod is None or not asks_qgpu(pod):
        return
    ref, subject = pod_ref(pod), pod_subject(pod)
    comps = facts.components
    managers = [
        p for p in comps.pods
        if is_qgpu(p) and (p.get("status") or {}).get("phase") == "Running"
        and "manager" in name_of(p)
    ]
    if not managers:
        found = [
            f"{c['metadata'].get('namespace')}/{c['metadata'].get('name')}" for c in comps.controllers if is_qgpu(c)
        ]
        evidence = ["qGPU controllers found: " + (", ".join(found) or "none"), "running qgpu-manager pods: 0"]
        yield QGPU_OPERATOR_MISSING.detect(subject, {"pod": ref}, evidence=evidence)
    node_values = qgpu_nodes(facts)
    if not node_values:
        marked = [n for n, o in facts.nodes.items() if labels(o).get("qgpu-device-enable") == "enable"]
        yield QGPU_NODE_NO_CAPACITY.detect(
            subject,
            {"pod": ref},
            evidence=[
                f"nodes labelled qgpu-device-enable=enable: {', '.join(marked) or 'none'}",
                f"nodes reporting {QGPU_CORE}: none",
            ],
        )
    namespace = facts.namespaces.get(t.namespace)
    ns_value = labels(namespace).get(POLICY_LABEL)
    ns_subject = f"namespace/{t.namespace}"
    if ns_value is not None:
        if ns_value not in POLICIES:
            yield QGPU_NS_POLICY_INVALID.detect(
                ns_subject,
                {
                    "namespace": t.namespace,
                    "value": ns_value,
                    "label": POLICY_LABEL,
                    "on_namespace": True,
                },
                evidence=[f"namespace {t.namespace}: {POLICY_LABEL}={ns_value}"],
            )
        return
    bad_nodes = {n: v for n, v in node_values.items() if v is not None and v not in POLICIES}
    if bad_nodes:
        yield QGPU_NS_POLICY_INVALID.detect(
            ns_subject,
            {
                "namespace": t.namespace,
                "value": ", ".join(sorted({str(v) for v in bad_nodes.values()})),
                "label": POLICY_LABEL,
                "on_namespace": False,
            },
            evidence=[f"node {n}: {POLICY_LABEL}={v}" for n, v in sorted(bad_nodes.items())],
        )
        return
    if any(v is not None for v in node_values.values()):
        return  # TKE style: the policy sits on the node pool
    yield QGPU_NS_POLICY_MISSING.detect(
        ns_subject,
        {
            "namespace": t.namespace,
            "pod": ref,
            "label": POLICY_LABEL,
        },
        evidence=[f"namespace {t.namespace} labels: {fmt_labels(labels(namespace))}",
                  f"qGPU nodes with {POLICY_LABEL}: none"],
    )


CHECK = Check(
    name="qgpu.prereqs",
    reads=("target", "pod", "nodes", "namespaces", "components"),
    emits=(QGPU_OPERATOR_MISSING, QGPU_NODE_NO_CAPACITY, QGPU_NS_POLICY_INVALID, QGPU_NS_POLICY_MISSING),
    run=run,
)
