"""The GPU node stack: device plugins, the GPU Operator's operands, MIG and sharing, from API objects.

A GPU pod gets a card only when a chain of node components works: the driver (on the host or in
the GPU Operator's driver container), the container toolkit, the operator's validator and the
device plugin that registers the cards with the kubelet under a resource name. The resource name
itself depends on the plugin's configuration: MIG "mixed" advertises ``nvidia.com/mig-<profile>``,
MIG "single" advertises the slices as ``nvidia.com/gpu``, and time-slicing / MPS with
``renameByDefault`` advertises ``nvidia.com/gpu.shared``. This module names those parts from
the objects (names, labels, node labels, capacity) so checks can say which link is broken.

It never performs I/O and never mutates the dicts it is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.kube.daemonsets import Placement, placement
from bot.kube.objects import labels_of, meta_of, name_of, owner_refs_of
from bot.kube.resources import GpuCapacity, gpu_family, node_gpu_capacity

Obj = Mapping[str, Any]

GPU = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
MIG_PREFIX = "nvidia.com/mig-"


# ---------------------------------------------------------------------------------------- plugins
@dataclass(frozen=True)
class PluginKind:
    """A device plugin and the resource families it registers."""

    key: str
    title: str
    #: name fragments of its DaemonSet (lower case)
    hints: tuple[str, ...]
    #: resource families (``bot.kube.resources.gpu_family``) it registers
    families: frozenset[str]
    #: name fragments that look like a hint but are something else
    exclude: tuple[str, ...] = ()


PLUGIN_KINDS: tuple[PluginKind, ...] = (
    PluginKind("qgpu", "qGPU manager (qgpu-manager)", ("qgpu-manager", "qgpu-device-plugin"), frozenset({"qgpu"})),
    PluginKind("hami", "HAMi device plugin", ("hami-device-plugin", "vgpu-device-plugin"), frozenset({"nvidia"})),
    PluginKind(
        "nvidia", "NVIDIA device plugin",
        ("nvidia-device-plugin", "gpu-device-plugin", "device-plugin-daemonset"),
        frozenset({"nvidia"}),
        exclude=("mps-control-daemon", "validator", "validation", "feature-discovery"),
    ),
    PluginKind("gpu-manager", "tkestack gpu-manager", ("gpu-manager",), frozenset({"vcuda"}),
               exclude=("qgpu",)),
)


#: family -> the plugin that registers it, as named when none is installed
FAMILY_PLUGIN: dict[str, str] = {"nvidia": "NVIDIA device plugin", "qgpu": "qGPU manager (qgpu-manager)",
                                 "vcuda": "tkestack gpu-manager"}



def _labels(obj: Obj | None) -> dict[str, str]:
    raw = labels_of(obj)
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def is_daemonset(obj: Obj) -> bool:
    return obj.get("kind") == "DaemonSet" or (
        "kind" not in obj and "desiredNumberScheduled" in (obj.get("status") or {})
    )


def plugin_kind(obj: Obj) -> PluginKind | None:
    """Which device plugin a DaemonSet runs, from its name (and app labels), or None."""
    text = " ".join([name_of(obj), *_labels(obj).values()]).lower()
    for kind in PLUGIN_KINDS:
        if any(h in text for h in kind.hints) and not any(x in name_of(obj).lower() for x in kind.exclude):
            return kind
    return None


def plugin_daemonsets(controllers: Iterable[Obj], family: str | None = None) -> list[Obj]:
    """The device-plugin DaemonSets among ``controllers``, optionally only those serving ``family``."""
    out = []
    for c in controllers:
        kind = plugin_kind(c) if is_daemonset(c) else None
        if kind is not None and (family is None or family in kind.families):
            out.append(c)
    return out


#: Node Feature Discovery's worker: it puts the PCI labels on a node that plugins select on
NFD_WORKER_HINTS = ("node-feature-discovery-worker", "nfd-worker")
#: node labels that NFD (or GFD, through NFD) maintains
NFD_LABEL_PREFIXES = ("feature.node.kubernetes.io/", "nvidia.com/gpu.present")


def nfd_workers(controllers: Iterable[Obj]) -> list[Obj]:
    """The NFD worker DaemonSets among ``controllers`` (those the GPU-stack listing found)."""
    return [c for c in controllers if is_daemonset(c) and any(h in name_of(c).lower() for h in NFD_WORKER_HINTS)]


def served_families(node: Obj, capacity: GpuCapacity | None = None) -> set[str]:
    """Resource families the node has allocatable cards of: some plugin registers them there.

    A capacity of 0 does not count: the kubelet keeps a resource whose plugin went away at 0
    instead of dropping it. ``capacity``: the node's ``node_gpu_capacity`` where the caller has it."""
    caps = node_gpu_capacity(node) if capacity is None else capacity
    return {f for r, (_, a) in caps.items() if a > 0 and (f := gpu_family(r)) is not None}


# ---------------------------------------------------------------------------------------- operator
#: the operator's core chain, in the order each waits for the previous one
CORE_STAGES: tuple[str, ...] = ("driver", "toolkit", "validator", "plugin")
#: operands that do not gate scheduling (MIG manager gates MIG layouts only)
AUX_STAGES: tuple[str, ...] = ("mig-manager", "gpu-feature-discovery", "dcgm", "dcgm-exporter")
#: stage -> DaemonSet name prefixes (OpenShift's precompiled drivers add a suffix)
STAGE_NAMES: dict[str, tuple[str, ...]] = {
    "driver": ("nvidia-driver-daemonset", "nvidia-vgpu-manager-daemonset"),
    "toolkit": ("nvidia-container-toolkit-daemonset",),
    "validator": ("nvidia-operator-validator",),
    "plugin": ("nvidia-device-plugin-daemonset",),
    "mig-manager": ("nvidia-mig-manager",),
    "gpu-feature-discovery": ("gpu-feature-discovery",),
    "dcgm-exporter": ("nvidia-dcgm-exporter",),
    "dcgm": ("nvidia-dcgm",),
}
#: stage -> the node label the operator sets to deploy it (``false`` turns the operand off there)
DEPLOY_LABELS: dict[str, str] = {
    "driver": "nvidia.com/gpu.deploy.driver",
    "toolkit": "nvidia.com/gpu.deploy.container-toolkit",
    "validator": "nvidia.com/gpu.deploy.operator-validator",
    "plugin": "nvidia.com/gpu.deploy.device-plugin",
    "mig-manager": "nvidia.com/gpu.deploy.mig-manager",
    "gpu-feature-discovery": "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "dcgm-exporter": "nvidia.com/gpu.deploy.dcgm-exporter",
    "dcgm": "nvidia.com/gpu.deploy.dcgm",
}
#: what an operator-managed operand carries
OPERATOR_MARKS = {"app.kubernetes.io/managed-by": "gpu-operator", "app.kubernetes.io/part-of": "nvidia-gpu"}
#: messages of a driver container that finds a driver already loaded on the host
HOST_DRIVER_TEXT = re.compile(
    r"driver is in use|already loaded|Could not unload NVIDIA driver|module is already loaded", re.IGNORECASE)


def operand_stage(ds: Obj) -> str | None:
    """The operator stage a DaemonSet is (``driver``, ``toolkit``, …), by its name, or None."""
    name = name_of(ds).lower()
    for stage, prefixes in STAGE_NAMES.items():
        if any(name == p or name.startswith(p + "-") for p in prefixes):
            if stage == "dcgm" and name.startswith("nvidia-dcgm-exporter"):
                continue
            return stage
    return None


def _operator_managed(ds: Obj) -> bool:
    labels = _labels(ds)
    owners = owner_refs_of(ds)
    return any(labels.get(k) == v for k, v in OPERATOR_MARKS.items()) or any(
        isinstance(o, Mapping) and o.get("kind") == "ClusterPolicy" for o in owners
    )


def operator_operands(controllers: Iterable[Obj]) -> dict[str, Obj]:
    """stage -> operand DaemonSet of a GPU Operator install ({} when there is none).

    The standalone device plugin's static manifest is also called nvidia-device-plugin-daemonset,
    so an install counts as the operator's only when a driver, toolkit or validator operand exists
    (or the DaemonSet is marked managed by the operator); operands are taken from that namespace.
    """
    daemonsets = [c for c in controllers if is_daemonset(c)]
    anchors = [d for d in daemonsets if operand_stage(d) in ("driver", "toolkit", "validator") or (
        operand_stage(d) is not None and _operator_managed(d))]
    if not anchors:
        return {}
    namespaces = {str(meta_of(d).get("namespace", "")) for d in anchors}
    out: dict[str, Obj] = {}
    for d in sorted(daemonsets, key=name_of):
        stage = operand_stage(d)
        if stage and str(meta_of(d).get("namespace", "")) in namespaces:
            out.setdefault(stage, d)
    return out


@dataclass(frozen=True)
class StageState:
    """One operand on one node."""

    stage: str
    placement: Placement
    #: the node's deploy label says anything but ``true`` (``false``, ``pre-installed``,
    #: ``paused-for-mig-change``): the operator switched the operand off there on purpose
    disabled: bool = False

    @property
    def ok(self) -> bool:
        return self.disabled or self.placement.ok


def stage_states(operands: Mapping[str, Obj], pods: Sequence[Obj], node: Obj,
                 stages: Sequence[str] = (*CORE_STAGES, *AUX_STAGES)) -> list[StageState]:
    """Each present operand's placement on ``node``, in stage order."""
    labels = _labels(node)
    out = []
    for stage in stages:
        ds = operands.get(stage)
        if ds is None:
            continue
        value = labels.get(DEPLOY_LABELS[stage])
        disabled = value is not None and value.lower() != "true"
        out.append(StageState(stage, placement(ds, pods, node), disabled))
    return out


def first_failing(states: Sequence[StageState]) -> StageState | None:
    """The earliest stage that is not running on the node (later ones usually wait on it).

    The validator's plugin-validation init container waits for the device plugin, a later stage:
    a validator stuck there is not the first failure when the plugin itself is failing.
    """
    failing = [s for s in states if not s.ok]
    if not failing:
        return None
    first = failing[0]
    health = first.placement.health
    if (first.stage == "validator" and health is not None and "plugin" in health.container
            and any(s.stage == "plugin" for s in failing[1:])):
        return next(s for s in failing if s.stage == "plugin")
    return first


# ---------------------------------------------------------------------------------------- MIG
MIG_STRATEGY = "nvidia.com/mig.strategy"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
#: mig-manager states that mean the layout is not (yet) what the label asks for
MIG_BAD_STATES = frozenset({"pending", "rebooting", "failed"})


def is_mig_resource(resource: str) -> bool:
    return resource.startswith(MIG_PREFIX)


def mig_labels(node: Obj) -> dict[str, str]:
    """The node's MIG labels (strategy, config, config state, product) that are set."""
    labels = _labels(node)
    keys = (MIG_STRATEGY, MIG_CONFIG, MIG_CONFIG_STATE, "nvidia.com/gpu.product", "nvidia.com/mig.capable")
    return {k: labels[k] for k in keys if k in labels}


def allocatable(node: Obj, resource: str) -> float:
    return node_gpu_capacity(node).get(resource, (0.0, 0.0))[1]


def offered(node: Obj) -> dict[str, float]:
    """NVIDIA resources the node has allocatable (> 0)."""
    return {r: a for r, (_, a) in node_gpu_capacity(node).items() if gpu_family(r) == "nvidia" and a > 0}


def mig_layout(node: Obj) -> str:
    """How the node exposes MIG, judged from what it advertises and its labels.

    ``mixed`` (MIG profiles as nvidia.com/mig-*), ``single`` (MIG slices as nvidia.com/gpu: the
    product label ends in -MIG-<profile> or the strategy label says single on a MIG product),
    ``none`` (whole GPUs), or ``unknown``.
    """
    names = offered(node)
    labels = _labels(node)
    if any(is_mig_resource(r) for r in names):
        return "mixed"
    product = labels.get("nvidia.com/gpu.product", "")
    if GPU in names and "-MIG-" in product.upper():
        return "single"
    if GPU in names or GPU + SHARED_SUFFIX in names:
        return "none"
    return "unknown"


# ---------------------------------------------------------------------------------------- sharing
SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
REPLICAS = "nvidia.com/gpu.replicas"
#: the device plugin's refusal (v0.12-v0.14 and v0.15+ wordings) of a request for more than one
#: replica of a shared resource, as the kubelet relays it in UnexpectedAdmissionError
SHARED_TOO_LARGE = re.compile(
    r"maximum request size for shared resources is 1(?:; found (?P<found>\d+))?"
    r"|request for '(?P<res>[^:']+): (?P<n>\d+)' too large", re.IGNORECASE)


def shared_twin(resource: str) -> str | None:
    """``nvidia.com/gpu`` <-> ``nvidia.com/gpu.shared`` (the name renameByDefault switches to)."""
    if resource == GPU:
        return GPU + SHARED_SUFFIX
    if resource == GPU + SHARED_SUFFIX:
        return GPU
    return None


def sharing(node: Obj) -> tuple[str, int]:
    """(sharing strategy, replicas per GPU) from the GPU Feature Discovery labels.

    ``time-slicing`` / ``mps`` / ``none``; a ``.shared`` resource or a replicas label above 1
    without a strategy label reads as time-slicing (older GFD versions label only the replicas).
    """
    return _sharing(node, None)


def _sharing(node: Obj, capacity: dict[str, tuple[float, float]] | None) -> tuple[str, int]:
    """``sharing``, with the node's GPU capacity when the caller has it already."""
    # two labels read in place: copying every label of the node cost more (asked per GPU node)
    labels = labels_of(node)
    if not isinstance(labels, Mapping):
        labels = {}
    strategy = str(labels.get(SHARING_STRATEGY, "")).lower()
    try:
        replicas = int(str(labels.get(REPLICAS, "1") or 1))
    except ValueError:
        replicas = 1
    if not strategy or strategy == "none":
        shared = GPU + SHARED_SUFFIX in (node_gpu_capacity(node) if capacity is None else capacity)
        strategy = "time-slicing" if (replicas > 1 or shared) else "none"
    return strategy, replicas


def is_shared(node: Obj, resource: str) -> bool:
    """The node hands out ``resource`` as replicas of a shared GPU."""
    if gpu_family(resource) != "nvidia" or is_mig_resource(resource):
        return False
    capacity = node_gpu_capacity(node)
    if resource.endswith(SHARED_SUFFIX):
        return resource in capacity
    strategy, _ = _sharing(node, capacity)
    return strategy != "none" and resource in capacity and GPU + SHARED_SUFFIX not in capacity
