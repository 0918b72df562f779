"""Small helpers several checks share: how a pod is referred to, number formatting, qGPU names."""

from __future__ import annotations

from typing import TypedDict

from bot.kube.objects import Obj, meta_of
from bot.kube.resources import QGPU_CORE, QGPU_MEMORY, pod_gpu_requests

__all__ = ["QGPU_CORE", "QGPU_MEMORY", "NodeItem", "PodItem", "asks_qgpu", "fmt_num", "pod_ref"]


class PodItem(TypedDict):
    """A pod in a list parameter that an offer repeats over (``each:``); its keys fill the offer."""

    namespace: str
    name: str
    ref: str


class NodeItem(TypedDict):
    """A node in a list parameter that an offer repeats over (``each:``)."""

    node: str


def pod_ref(pod: Obj) -> str:
    meta = meta_of(pod)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def asks_qgpu(pod: Obj) -> bool:
    return any(r.startswith("tke.cloud.tencent.com/qgpu") for r in pod_gpu_requests(pod))


def fmt_num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def event_time(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")
