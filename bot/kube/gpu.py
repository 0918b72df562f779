"""What makes a node a GPU node, and which pods are GPU node components.

One definition for the whole bot. A node whose device plugin never registered advertises no GPU
resource, yet it is exactly the node a user needs to hear about, so capacity alone is not enough:
a node is a GPU node when it advertises a known GPU resource, carries a label that GPU tooling or
a cloud provider puts on GPU machines, or runs a GPU device-plugin / node-agent pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.kube.resources import is_gpu_resource

Obj = Mapping[str, Any]

#: label keys whose presence marks a GPU machine (value ignored unless listed in GPU_LABEL_VALUES)
GPU_LABEL_KEYS: tuple[str, ...] = (
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.machine",
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
    "node.kubernetes.io/gpu",
    "accelerator",
    "kubernetes.azure.com/accelerator",
    "tke.cloud.tencent.com/qgpu-schedule-policy",
    "gpu-type",
)
#: label key -> values that mark a GPU machine (labels whose mere presence says nothing)
GPU_LABEL_VALUES: dict[str, frozenset[str]] = {
    "nvidia.com/gpu.present": frozenset({"true"}),
    "feature.node.kubernetes.io/pci-10de.present": frozenset({"true"}),
    "qgpu-device-enable": frozenset({"enable"}),
    "nvidia-device-enable": frozenset({"enable"}),
    "nvidia.com/gpu.deploy.device-plugin": frozenset({"true"}),
    "gpu": frozenset({"on", "true"}),
}
#: name fragments of pods and controllers that run GPU device plugins, schedulers or node agents
COMPONENT_HINTS: tuple[str, ...] = (
    "nvidia-device-plugin",
    "gpu-device-plugin",
    "device-plugin-daemonset",
    "nvidia-driver-daemonset",
    "nvidia-container-toolkit",
    "nvidia-operator-validator",
    "nvidia-dcgm",
    "gpu-feature-discovery",
    "gpu-operator",
    "qgpu-manager",
    "qgpu-scheduler",
    "qgpu-operator",
    "qgpu-device-plugin",
    "hami-device-plugin",
    "hami-scheduler",
    "vgpu-scheduler",
    "gpu-manager",
    "gpu-admission",
    "gpu-quota-admission",
    "gpubot-node",
)


def gpu_labels(node: Obj) -> list[str]:
    """The node's labels that mark it as a GPU machine, as ``key=value`` text."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    out = [f"{k}={labels[k]}" for k in GPU_LABEL_KEYS if k in labels]
    out += [f"{k}={labels[k]}" for k, values in GPU_LABEL_VALUES.items() if str(labels.get(k, "")).lower() in values]
    return out


def advertised_gpu_resources(node: Obj) -> dict[str, str]:
    """GPU resources in the node's capacity (a count of 0 still counts: the plugin registered)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    return {name: str(value) for name, value in capacity.items() if is_gpu_resource(name)}


def is_gpu_component(name: str, labels: Mapping[str, str] | None = None) -> bool:
    """A pod or controller that belongs to the GPU stack, judged by its name and app labels."""
    text = " ".join([name, *((labels or {}).values())]).lower()
    return any(hint in text for hint in COMPONENT_HINTS) or "qgpu" in text


def is_gpu_node(node: Obj, component_nodes: Iterable[str] = ()) -> bool:
    """Advertises a GPU resource, carries a GPU label, or runs a GPU component pod."""
    name = str((node.get("metadata") or {}).get("name", ""))
    return bool(advertised_gpu_resources(node)) or bool(gpu_labels(node)) or name in set(component_nodes)
