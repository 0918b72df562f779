"""qGPU names and values shared by the qGPU checks (TKE/TCE documentation)."""

from __future__ import annotations

from typing import Any

from bot.engine.facts import Facts, per_cluster
from bot.kube.objects import labels_of, meta_of
from bot.kube.resources import QGPU_CORE

POLICY_LABEL = "tke.cloud.tencent.com/qgpu-schedule-policy"
#: accepted values and their abbreviations
POLICIES = {
    "best-effort": "best-effort",
    "be": "best-effort",
    "fixed-share": "fixed-share",
    "fs": "fixed-share",
    "burst-share": "burst-share",
    "bs": "burst-share",
}
DEFAULT_NS_LABEL = "kubernetes.io/metadata.name"


def labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(labels_of(obj))


def fmt_labels(values: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "(none)"


def is_qgpu(obj: dict[str, Any]) -> bool:
    meta = meta_of(obj)
    text = " ".join([str(meta.get("name", ""))] + [str(v) for v in (meta.get("labels") or {}).values()])
    return "qgpu" in text.lower()


@per_cluster("nodes")
def qgpu_nodes(facts: Facts) -> dict[str, str | None]:
    """The nodes that report qGPU capacity, each with its scheduling-policy label (None: unset)."""
    return {
        n: labels_of(o).get(POLICY_LABEL)
        for n, o in facts.nodes.items()
        if float(((o.get("status") or {}).get("capacity") or {}).get(QGPU_CORE, 0) or 0) > 0
    }


@per_cluster("nodes")
def policy_on_nodes(facts: Facts) -> bool:
    """Some node carries the qGPU scheduling policy (TKE style: the policy sits on the node pool)."""
    return any(POLICY_LABEL in labels_of(node) for node in facts.nodes.values())
