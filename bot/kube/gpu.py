"""What makes a node a GPU node, and which pods are GPU node components.

One definition for the whole bot. A node whose device plugin never registered advertises no GPU
resource, yet it is exactly the node a user needs to hear about, so capacity alone is not enough:
a node is a GPU node when it advertises a known GPU resource, carries a label that GPU tooling or
a cloud provider puts on GPU machines, or runs a GPU device-plugin / node-agent pod.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from bot.kube.node_map import NodeMap
from bot.kube.objects import labels_of, name_of
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
)
#: gpubot's own per-node DaemonSets (the read-only agent and the actuator, ``bot.probes.node_agent``):
#: the chart places them on GPU nodes, yet they are gpubot, not the GPU stack, so they are never
#: evidence that a node is a GPU node nor a component whose pods a diagnosis lists
OWN_COMPONENTS: tuple[str, ...] = ("gpubot-node", "gpubot-actuator")
#: the label the chart and the simulator put on everything gpubot deploys
OWN_PART_OF = ("app.kubernetes.io/part-of", "gpubot")
# one search each instead of a loop over the fragments: every pod on every GPU node is asked
_OWN = re.compile("|".join(map(re.escape, OWN_COMPONENTS)))
_NFD_NVIDIA_CLASS = re.compile(r"feature\.node\.kubernetes\.io/pci-03[0-9a-f]{2}_10de\.present")
#: what every key ``_NFD_NVIDIA_CLASS`` accepts starts with: most labels are turned away by it alone
_NFD_PCI_PREFIX = "feature.node.kubernetes.io/pci-03"
#: every label key ``gpu_labels`` looks at by name
_GPU_KEY_SET = frozenset(GPU_LABEL_KEYS) | frozenset(GPU_LABEL_VALUES)
#: ``_NFD_PCI_PREFIX`` as often as ``map`` asks for it
_NFD_PREFIXES = itertools.repeat(_NFD_PCI_PREFIX)
_HINT = re.compile("|".join(map(re.escape, (*COMPONENT_HINTS, "qgpu"))))


def gpu_labels(node: Obj) -> list[str]:
    """The node's labels that mark it as a GPU machine, as ``key=value`` text."""
    labels = labels_of(node)
    out = [f"{k}={labels[k]}" for k in GPU_LABEL_KEYS if k in labels]
    out += [f"{k}={labels[k]}" for k, values in GPU_LABEL_VALUES.items() if str(labels.get(k, "")).lower() in values]
    # NFD's PCI label with the device class first (pci-0300_10de, pci-0302_10de): an NVIDIA card all the same
    out += [f"{k}={v}" for k, v in labels.items() if _NFD_NVIDIA_CLASS.fullmatch(k) and str(v).lower() == "true"]
    return out


def advertised_gpu_resources(node: Obj) -> dict[str, str]:
    """GPU resources in the node's capacity (a count of 0 still counts: the plugin registered)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    return {name: str(value) for name, value in capacity.items() if is_gpu_resource(name)}


def is_own_component(name: str, labels: Mapping[str, str] | None = None) -> bool:
    """One of gpubot's own pods or controllers (its part-of label, or an own DaemonSet's name)."""
    labels = labels or {}
    key, value = OWN_PART_OF
    if labels.get(key) == value:
        return True
    return bool(_OWN.search(name.lower()) or _OWN.search(str(labels.get("app.kubernetes.io/name", ""))))


def is_gpu_component(name: str, labels: Mapping[str, str] | None = None) -> bool:
    """A pod or controller that belongs to the GPU stack, judged by its name and app labels;
    never one of gpubot's own (see ``OWN_COMPONENTS``)."""
    if not labels:  # by name alone: asked of every pod on every GPU node of a node-status
        low = name.lower()
        return _OWN.search(low) is None and _HINT.search(low) is not None
    if is_own_component(name, labels):
        return False
    text = " ".join([name, *((labels or {}).values())]).lower()
    return _HINT.search(text) is not None


def marks_gpu(node: Obj) -> bool:
    """The node's own object says GPU machine: it advertises a GPU resource or carries a GPU label
    (``advertised_gpu_resources`` or ``gpu_labels``, answered without writing either out: a cold
    question asks it of every node, 5,000 of them in 15 ms that way)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    for name in capacity:
        if "/" in name and is_gpu_resource(name):  # cpu, memory, pods: no vendor domain, no GPU
            return True
    labels = labels_of(node)
    # most nodes: no label a GPU machine carries, found without looking at a value (the prefix
    # test is mapped, not a generator: a question at 5,000 nodes asks it of every label of every node)
    if not labels or _GPU_KEY_SET.isdisjoint(labels) and not any(map(str.startswith, labels, _NFD_PREFIXES)):
        return False
    return bool(gpu_labels(node))


def is_gpu_node(node: Obj, component_nodes: Iterable[str] = ()) -> bool:
    """Advertises a GPU resource, carries a GPU label, or runs a GPU component pod."""
    name = name_of(node)
    if marks_gpu(node):
        return True
    # a set is used as is: callers classify every node of a cluster against the same names
    return name in (component_nodes if isinstance(component_nodes, set | frozenset) else set(component_nodes))


def nodes_that_may_offer(nodes: Mapping[str, Obj], resources: Collection[str]) -> Iterable[str]:
    """The names of ``nodes`` that may advertise any of ``resources`` (GPU resources, as a pod asks
    them): a ``NodeMap``'s GPU marks, by name (the watch cache's map is in that order), since a
    node whose capacity lists a GPU resource is marked; else every name, in ``nodes``' order. A
    question at 5,000 nodes then walks its 500 GPU nodes, not all of them, to find those offering
    what a pod asks."""
    if isinstance(nodes, NodeMap) and nodes.mark is marks_gpu and all(is_gpu_resource(r) for r in resources):
        return sorted(nodes.marked) if resources else nodes.keys()
    return nodes.keys()


def gpu_node_names(nodes: Mapping[str, Obj], component_nodes: set[str] | frozenset[str]) -> list[str]:
    """Every GPU node of ``nodes`` (see ``is_gpu_node``), sorted; a ``NodeMap``'s marks are reused
    when they are GPU marks."""
    if isinstance(nodes, NodeMap) and nodes.mark is marks_gpu:
        marked = nodes.marked
    else:
        marked = frozenset(n for n, o in nodes.items() if marks_gpu(o))
    return sorted(marked | (component_nodes & nodes.keys()))


#: node-label key prefixes a pod selects on only when it wants a GPU machine
_GPU_SELECTOR_PREFIXES: tuple[str, ...] = (
    "nvidia.com/gpu",
    "nvidia.com/mig",
    "karpenter.k8s.aws/instance-gpu",
    "karpenter.k8s.aws/instance-accelerator",
    "cloud.google.com/gke-accelerator",
    "cloud.google.com/gke-gpu",
    "k8s.amazonaws.com/accelerator",
)
#: image name tokens of CUDA builds (``nvidia/cuda:12.2.0-base``, ``pytorch:2.1.0-cuda12.1-cudnn8``,
#: ``tensorflow:2.15.0-gpu``, wheels tags such as ``cu121``)
_IMAGE_TOKEN = re.compile(r"^(?:cuda\w*|cudnn\w*|cu1\d\d|gpu|tensorrt\w*)$")
#: environment variables only a GPU workload sets (the NVIDIA container runtime reads the first)
_GPU_ENV: tuple[str, ...] = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
_NO_GPU_VALUES = frozenset({"", "void", "none", "-1"})


def _gpu_label_key(key: str) -> bool:
    return key in GPU_LABEL_KEYS or key in GPU_LABEL_VALUES or key.startswith(_GPU_SELECTOR_PREFIXES)


def gpu_expectations(pod: Obj) -> list[str]:
    """Evidence that a pod expects a GPU even if it requests none, one line per sign.

    A CUDA image, a GPU environment variable, a GPU node selector or affinity, or the ``nvidia``
    runtime class. Nothing here means the pod may well be CPU-only, and telling it to "add a GPU
    request" would be wrong.
    """
    spec = pod.get("spec") or {}
    hints: list[str] = []
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        name = str(container.get("name", "?"))
        image = str(container.get("image") or "")
        tokens = re.split(r"[/:@._-]+", image.lower())
        if any(_IMAGE_TOKEN.match(t) for t in tokens):
            hints.append(f"container {name}: image {image} is a CUDA/GPU build")
        for env in container.get("env") or []:
            env_name = str(env.get("name") or "")
            value = str(env.get("value") or "").strip().lower()
            if env_name in _GPU_ENV and (value not in _NO_GPU_VALUES or env.get("valueFrom")):
                hints.append(f"container {name}: sets {env_name}={env.get('value', '(from a reference)')}")
    for key, value in (spec.get("nodeSelector") or {}).items():
        if _gpu_label_key(str(key)):
            hints.append(f"nodeSelector {key}={value} picks GPU machines")
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            key = str(expr.get("key") or "")
            if _gpu_label_key(key) and expr.get("operator") in ("In", "Exists", "Gt"):
                hints.append(f"required node affinity on {key} picks GPU machines")
    runtime = str(spec.get("runtimeClassName") or "")
    if "nvidia" in runtime.lower():
        hints.append(f"runtimeClassName {runtime}")
    return hints
