"""qGPU names and values shared by the qGPU checks (TKE/TCE documentation)."""

from __future__ import annotations

from typing import Any

from bot.kube.objects import labels_of, meta_of

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
