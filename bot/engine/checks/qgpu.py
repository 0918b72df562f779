"""qGPU prerequisites: operator running, nodes reporting qGPU, the scheduling policy label, and
the TCE System-vs-Tenant namespace trap."""

from __future__ import annotations

import re
from typing import Any

from bot.engine.checks.common import QGPU_CORE, asks_qgpu, nodes, pod_ref, target, target_pod
from bot.engine.context import Context
from bot.registry import check
from bot.report import Remediation

POLICY_LABEL = "tke.cloud.tencent.com/qgpu-schedule-policy"
#: accepted values and their abbreviations (TKE docs)
POLICIES = {
    "best-effort": "best-effort",
    "be": "best-effort",
    "fixed-share": "fixed-share",
    "fs": "fixed-share",
    "burst-share": "burst-share",
    "bs": "burst-share",
}
DEFAULT_NS_LABEL = "kubernetes.io/metadata.name"
#: namespaces Kubernetes itself creates; they are System by design
BUILTIN_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", "default"}


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


@check("qgpu.prereqs", needs=("kube.target", "kube.nodes", "kube.namespaces", "qgpu.components"))
def prereqs(ctx: Context) -> None:
    """The three qGPU prerequisites (operator, node capacity, policy label), only for qGPU pods."""
    pod = target_pod(ctx)
    t = target(ctx)
    if pod is None or t is None or not asks_qgpu(pod):
        return
    ref = pod_ref(pod)
    comps = ctx.fact("qgpu.components") or {}
    running = [
        p
        for p in comps.get("pods", [])
        if (p.get("status") or {}).get("phase") == "Running" and "manager" in str(p["metadata"].get("name"))
    ]
    if not running:
        found = [
            f"{c['metadata'].get('namespace')}/{c['metadata'].get('name')}"
            for c in comps.get("controllers", [])
        ]
        ctx.emit(
            "QGPU_OPERATOR_MISSING",
            pod=ref,
            evidence=[
                "qGPU controllers found: " + (", ".join(found) or "none"),
                "running qgpu-manager pods: 0",
            ],
            rank=3,
        )
    qgpu_nodes = {
        n: o
        for n, o in nodes(ctx).items()
        if float(((o.get("status") or {}).get("capacity") or {}).get(QGPU_CORE, 0) or 0) > 0
    }
    if not qgpu_nodes:
        marked = [n for n, o in nodes(ctx).items() if _labels(o).get("qgpu-device-enable") == "enable"]
        ctx.emit(
            "QGPU_NODE_NO_CAPACITY",
            pod=ref,
            evidence=[
                f"nodes labelled qgpu-device-enable=enable: {', '.join(marked) or 'none'}",
                f"nodes reporting {QGPU_CORE}: none",
            ],
            rank=4,
        )
    namespace = (ctx.fact("kube.namespaces") or {}).get(t.namespace)
    ns_value = _labels(namespace).get(POLICY_LABEL)
    node_values = {n: _labels(o).get(POLICY_LABEL) for n, o in qgpu_nodes.items()}
    if ns_value is not None:
        if ns_value not in POLICIES:
            ctx.emit(
                "QGPU_NS_POLICY_INVALID",
                namespace=t.namespace,
                value=ns_value,
                label=POLICY_LABEL,
                evidence=[f"namespace {t.namespace}: {POLICY_LABEL}={ns_value}"],
                remediations=[_label_offer(t.namespace, "fixed-share")],
                rank=6,
            )
        return
    bad_nodes = {n: v for n, v in node_values.items() if v is not None and v not in POLICIES}
    if bad_nodes:
        ctx.emit(
            "QGPU_NS_POLICY_INVALID",
            namespace=t.namespace,
            value=", ".join(sorted(set(bad_nodes.values()))),
            label=POLICY_LABEL,
            evidence=[f"node {n}: {POLICY_LABEL}={v}" for n, v in sorted(bad_nodes.items())],
            remediations=[],
            rank=6,
        )
        return
    if any(v is not None for v in node_values.values()):
        return  # TKE style: the policy sits on the node pool
    ctx.emit(
        "QGPU_NS_POLICY_MISSING",
        namespace=t.namespace,
        pod=ref,
        label=POLICY_LABEL,
        evidence=[
            f"namespace {t.namespace} labels: {_fmt_labels(_labels(namespace))}",
            f"qGPU nodes with {POLICY_LABEL}: none",
        ],
        remediations=[_label_offer(t.namespace, "fixed-share")],
        rank=2,
    )


def _label_offer(namespace: str, policy: str) -> Remediation:
    return Remediation(
        "namespace.label",
        {"namespace": namespace, "label": POLICY_LABEL, "value": policy},
        f"Label namespace {namespace} {POLICY_LABEL}={policy}",
    )


def _fmt_labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none)"


@check("ns.system_classified", needs=("kube.target", "kube.namespaces", "kube.node_pods"))
def system_classified(ctx: Context) -> None:
    """A namespace with only the default label is treated as System on TCE; diff it against a namespace
    where GPU pods run."""
    pod = target_pod(ctx)
    t = target(ctx)
    if pod is None or t is None or not asks_qgpu(pod) or t.namespace in BUILTIN_NAMESPACES:
        return
    if any(POLICY_LABEL in _labels(node) for node in nodes(ctx).values()):
        return  # TKE style (policy on the node pool): the TCE System/Tenant split does not apply
    all_ns: dict[str, Any] = ctx.fact("kube.namespaces") or {}
    labels = _labels(all_ns.get(t.namespace))
    if set(labels) - {DEFAULT_NS_LABEL}:
        return
    good = _working_namespace(ctx, exclude=t.namespace)
    good_labels = _labels(all_ns.get(good)) if good else {}
    missing = {k: v for k, v in good_labels.items() if k != DEFAULT_NS_LABEL and k not in labels}
    evidence = [f"{t.namespace}: {_fmt_labels(labels)}"]
    remediations: list[Remediation] = []
    if good:
        evidence.append(f"{good} (GPU pods run here): {_fmt_labels(good_labels)}")
        evidence += [f"+ {k}={v}" for k, v in sorted(missing.items())]
        if missing:
            remediations.append(
                Remediation(
                    "namespace.label",
                    {"namespace": t.namespace, "copy_from": good},
                    f"Copy {len(missing)} label(s) from {good} to {t.namespace}",
                )
            )
    ctx.emit(
        "NS_SYSTEM_CLASSIFIED",
        namespace=t.namespace,
        good_namespace=good or "(none found)",
        missing_labels=", ".join(f"{k}={v}" for k, v in sorted(missing.items())) or "(unknown)",
        evidence=evidence,
        remediations=remediations,
        rank=3,
    )


def _working_namespace(ctx: Context, *, exclude: str) -> str:
    """The namespace with the most running GPU pods, other than the target's."""
    counts: dict[str, int] = {}
    for pods in (ctx.fact("kube.node_pods") or {}).values():
        for p in pods:
            if p.phase == "Running" and p.gpu and p.namespace != exclude:
                counts[p.namespace] = counts.get(p.namespace, 0) + 1
    return max(sorted(counts), key=lambda n: counts[n]) if counts else ""


#: the field notes' advice: qGPU operator releases before this leak allocations
MIN_OPERATOR_VERSION = (3, 0, 2)
_VERSION = re.compile(r":v?(\d+)\.(\d+)(?:\.(\d+))?")


@check("qgpu.operator_version", needs=("kube.target", "qgpu.components"))
def operator_version(ctx: Context) -> None:
    """An operator image older than 3.0.2, which is known to leak qGPU allocations."""
    pod = target_pod(ctx)
    if pod is None or not asks_qgpu(pod):
        return
    for ctrl in (ctx.fact("qgpu.components") or {}).get("controllers", []):
        meta = ctrl.get("metadata") or {}
        if "operator" not in str(meta.get("name", "")):
            continue
        containers = (((ctrl.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        for container in containers:
            image = str(container.get("image", ""))
            match = _VERSION.search(image.rsplit("/", 1)[-1])
            if not match:
                continue
            version = tuple(int(part or 0) for part in match.groups())
            if version < MIN_OPERATOR_VERSION:
                ctx.emit(
                    "QGPU_OPERATOR_OLD",
                    value=".".join(map(str, version)),
                    evidence=[f"{meta.get('namespace')}/{meta.get('name')}: image {image}"],
                    rank=50,
                )
                return
