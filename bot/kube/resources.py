"""Kubernetes resource quantities and GPU requests, read from plain API dicts.

What a pod asks for and what a node offers decide most GPU scheduling failures, so this module
computes both the way the kubelet and scheduler do (effective pod request, requests defaulting to
limits) and flags specs the qGPU admission or the device plugins would reject.

It never performs I/O and never mutates the dicts it is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

QGPU_CORE = "tke.cloud.tencent.com/qgpu-core"
QGPU_MEMORY = "tke.cloud.tencent.com/qgpu-memory"
#: HAMi's vGPU slice of an NVIDIA card (its chart defaults): device memory in MiB, memory as a
#: percentage of the card, and a share of the card's compute in percent; counted with nvidia.com/gpu
HAMI_GPUMEM = "nvidia.com/gpumem"
HAMI_GPUMEM_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_GPUCORES = "nvidia.com/gpucores"
#: tkestack gpu-manager's vGPU: vcuda-core in percent of a card (100 = one card), vcuda-memory in
#: blocks of 256 MiB
VCUDA_CORE = "tencent.com/vcuda-core"
VCUDA_MEMORY = "tencent.com/vcuda-memory"

#: Every extended resource that means "a GPU or a slice of one", with the family it belongs to.
#: Families matter because a container must not mix them (whole cards and qGPU slices), and
#: because the vGPU families are placed by their own scheduler (``SCHEDULER_MANAGED_FAMILIES``).
GPU_RESOURCE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"nvidia\.com/gpu(\.shared)?"), "nvidia"),
    (re.compile(r"nvidia\.com/mig-[0-9a-z.\-]+"), "nvidia"),
    (re.compile(r"nvidia\.com/gpu(mem|mem-percentage|cores)"), "hami"),
    (re.compile(r"tke\.cloud\.tencent\.com/qgpu-(core|memory)"), "qgpu"),
    (re.compile(r"tencent\.com/vcuda-(core|memory)"), "vcuda"),
    (re.compile(r"amd\.com/gpu"), "amd"),
    (re.compile(r"gpu\.intel\.com/i915"), "intel"),
)
#: Families no node advertises: HAMi's scheduler accounts for them from its own per-card
#: registrations (a node annotation), and its kube-scheduler is told to ignore them. A scheduler
#: without HAMi's extender therefore finds no node with any nvidia.com/gpumem at all.
SCHEDULER_MANAGED_FAMILIES: frozenset[str] = frozenset({"hami"})

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d{1,4})|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
_SUFFIX: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Kubernetes quantity (``100m``, ``1Gi``, ``1e3``, ``16Ki``) as a Decimal.

    YAML turns ``qgpu-core: 20`` into an int, so numbers are accepted too. Raises ValueError for
    anything the API server would reject.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int | float):
        result = Decimal(str(value))
        if not result.is_finite():
            raise ValueError(f"not a quantity: {value!r}")
        return result
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, exponent, suffix = match.groups()
    try:
        result = Decimal(number)
        if exponent:
            result = result.scaleb(int(exponent[1:]))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid numbers
        raise ValueError(f"not a quantity: {value!r}") from exc
    return result * _SUFFIX[suffix] if suffix else result


def quantity_or_none(value: Any) -> Decimal | None:
    """``parse_quantity``, or None for a malformed value. Text is parsed once per distinct value:
    a question at 5,000 nodes reads the same few quantities ("8", "0", "110") thousands of times."""
    if isinstance(value, str):
        return _text_quantity(value)
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


@lru_cache(maxsize=4096)
def _text_quantity(value: str) -> Decimal | None:
    try:
        return parse_quantity(value)
    except ValueError:
        return None


@lru_cache(maxsize=1024)
def gpu_family(name: str) -> str | None:
    """The GPU family (``nvidia``, ``hami``, ``qgpu``, ``vcuda``, ``amd``, ``intel``) of a resource, or None."""
    for pattern, family in GPU_RESOURCE_PATTERNS:
        if pattern.fullmatch(name):
            return family
    return None


def is_gpu_resource(name: str) -> bool:
    """True for any resource in ``GPU_RESOURCE_PATTERNS``."""
    return gpu_family(name) is not None


def is_node_advertised(name: str) -> bool:
    """A GPU resource that nodes advertise in capacity (every family but the scheduler-managed)."""
    family = gpu_family(name)
    return family is not None and family not in SCHEDULER_MANAGED_FAMILIES


def container_requests(
    container: Mapping[str, Any], *, only: Callable[[str], bool] | None = None
) -> dict[str, Decimal]:
    """Every resource a container requests; limits stand in where no request is set.

    The API server defaults a missing request to the limit, but objects read from files
    (scenarios, ``kubectl get -o yaml`` of a template) may not have been defaulted yet.
    Unparseable values are left out: spec_problems reports those.
    """
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    merged: dict[str, Decimal] = {}
    for source in (limits, requests):
        for name, raw in source.items():
            if only is not None and not only(str(name)):
                continue  # parsing every cpu/memory quantity of 100k pods costs seconds
            quantity = quantity_or_none(raw)
            if quantity is not None:
                merged[str(name)] = quantity
    return merged


def container_gpu_resources(container: Mapping[str, Any]) -> dict[str, float]:
    """The GPU resources one container asks for (requests, defaulting to limits)."""
    return {k: float(v) for k, v in container_requests(container).items() if is_gpu_resource(k)}


def _add(total: dict[str, Decimal], part: Mapping[str, Decimal]) -> None:
    for name, quantity in part.items():
        total[name] = total.get(name, Decimal(0)) + quantity


def pod_requests(pod: Mapping[str, Any], *, only: Callable[[str], bool] | None = None) -> dict[str, Decimal]:
    """The effective request of a pod per resource, as the scheduler computes it.

    Init containers run one at a time before the app containers, so the pod needs the larger of
    (each init container) and (the sum of app containers). Sidecars (init containers with
    ``restartPolicy: Always``) keep running, so they add to everything that starts after them.
    """
    spec = pod.get("spec") or {}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for init in spec.get("initContainers") or []:
        own = container_requests(init, only=only)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, own)
            running = dict(sidecars)
        else:
            running = dict(sidecars)
            _add(running, own)
        for name, quantity in running.items():
            init_peak[name] = max(init_peak.get(name, Decimal(0)), quantity)
    total = dict(sidecars)
    for container in spec.get("containers") or []:
        _add(total, container_requests(container, only=only))
    for name, quantity in init_peak.items():
        total[name] = max(total.get(name, Decimal(0)), quantity)
    return total


def pod_gpu_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """The effective GPU request of a pod per GPU resource (see pod_requests)."""
    return {k: float(v) for k, v in pod_requests(pod, only=is_gpu_resource).items() if v}


def pod_node_gpu_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """The pod's GPU requests a node must advertise (HAMi's gpumem/gpucores left out)."""
    return {k: v for k, v in pod_gpu_requests(pod).items() if is_node_advertised(k)}


def vgpu_families(pod: Mapping[str, Any]) -> set[str]:
    """The vGPU families (``hami``, ``vcuda``) among the pod's GPU requests."""
    return {f for r in pod_gpu_requests(pod) if (f := gpu_family(r)) in ("hami", "vcuda")}


@dataclass(frozen=True)
class SpecProblem:
    """A pod spec mistake found before asking the cluster anything."""

    #: a finding code from findings.md (SPEC_MIXED_GPU_RESOURCES, SPEC_ZERO_CPU_MEMORY, SPEC_QGPU_INVALID)
    code: str
    #: the container the problem is in
    container: str
    #: one human sentence naming the offending values (the container name is not repeated)
    detail: str


def _all_containers(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []


def _plain_int(raw: Any) -> int | None:
    """qGPU values are plain integers: ``1Gi`` or ``5e1`` are valid quantities but wrong here."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and re.fullmatch(r"\s*\+?\d{1,9}\s*", raw):
        return int(raw)
    return None


def _qgpu_core_valid(value: int) -> bool:
    if value <= 0:
        return False
    return value % 5 == 0 if value <= 100 else value % 100 == 0


def _container_problems(container: Mapping[str, Any]) -> list[SpecProblem]:
    name = str(container.get("name", "?"))
    resources = container.get("resources") or {}
    sections = {key: resources.get(key) or {} for key in ("requests", "limits")}
    problems: list[SpecProblem] = []
    asked = container_requests(container)
    families = {gpu_family(resource) for resource in asked if asked[resource]}
    if "nvidia" in families and "qgpu" in families:
        gpu_names = sorted(r for r in asked if gpu_family(r) in ("nvidia", "qgpu"))
        problems.append(SpecProblem(
            "SPEC_MIXED_GPU_RESOURCES", name,
            f"asks for both whole GPUs and qGPU slices: {', '.join(gpu_names)}",
        ))
    for section, values in sections.items():
        for resource in ("cpu", "memory"):
            if resource in values and quantity_or_none(values[resource]) == 0:
                problems.append(SpecProblem(
                    "SPEC_ZERO_CPU_MEMORY", name, f"{section}.{resource} is '0'"))
    problems.extend(_qgpu_problems(name, sections))
    return problems


def _qgpu_problems(name: str, sections: Mapping[str, Mapping[str, Any]]) -> list[SpecProblem]:
    def bad(detail: str) -> SpecProblem:
        return SpecProblem("SPEC_QGPU_INVALID", name, detail)

    problems: list[SpecProblem] = []
    for resource in (QGPU_CORE, QGPU_MEMORY):
        short = resource.rsplit("/", 1)[1]
        present = {s: v[resource] for s, v in sections.items() if resource in v}
        for section, raw in present.items():
            number = _plain_int(raw)
            if resource == QGPU_CORE and (number is None or not _qgpu_core_valid(number)):
                problems.append(bad(
                    f"{section}.{short} {raw} must be 5-100 in steps of 5, or N×100 for whole cards"))
            elif resource == QGPU_MEMORY and (number is None or number <= 0):
                problems.append(bad(f"{section}.{short} {raw} must be a positive whole number of GiB"))
        if len(present) == 2:
            values = [quantity_or_none(v) for v in present.values()]
            if values[0] != values[1]:
                problems.append(bad(
                    f"{short} requests {present['requests']} differ from limits {present['limits']}; "
                    "qGPU needs them equal"))
    has_core = any(QGPU_CORE in v for v in sections.values())
    has_memory = any(QGPU_MEMORY in v for v in sections.values())
    if has_memory and not has_core:
        problems.append(bad("qgpu-memory is set without qgpu-core"))
    return problems


def spec_problems(pod: Mapping[str, Any]) -> list[SpecProblem]:
    """Spec mistakes in every container (init containers included), in container order."""
    problems: list[SpecProblem] = []
    for container in _all_containers(pod):
        problems.extend(_container_problems(container))
    return problems


#: ``node_gpu_capacity``'s answer, as a caller that asks it once and passes it on holds it
GpuCapacity = Mapping[str, tuple[float, float]]


#: node_gpu_capacity's answers by node id, each kept with its node (an id names one live object)
CapacityMemory = dict[int, tuple[Mapping[str, Any], dict[str, tuple[float, float]]]]
#: the memory in force, while ``capacities_remembered`` is
_REMEMBERED: ContextVar[CapacityMemory | None] = ContextVar("gpu_capacities", default=None)


@contextmanager
def capacities_remembered(memory: CapacityMemory | None = None) -> Iterator[None]:
    """Within it, ``node_gpu_capacity`` works each node object out once.

    A question's checks and views ask it of every candidate node, five to ten times each (the
    plugin, sharing, capacity and health checks, the node table): at 10,000 nodes that was ~5,000
    parses of the same quantities a question. A node object does not change during a question; a
    memory that lives as long as the question keeps nothing stale. ``memory``: one that outlives
    this block, for the diagnoses of one answer that read the same node objects (``gpubot
    pending``); by default a fresh one."""
    token = _REMEMBERED.set({} if memory is None else memory)
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


def node_gpu_capacity(node: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """``{resource: (capacity, allocatable)}`` for every GPU resource a node reports (shared
    within ``capacities_remembered``: callers do not change it)."""
    memory = _REMEMBERED.get()
    if memory is None:
        return _node_gpu_capacity(node)
    hit = memory.get(id(node))
    if hit is None or hit[0] is not node:  # the node is kept with its answer: an id names one live object
        hit = memory[id(node)] = (node, _node_gpu_capacity(node))
    return hit[1]


def _node_gpu_capacity(node: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    status = node.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    result: dict[str, tuple[float, float]] = {}
    # the GPU names first: most nodes have none, and the checks ask this of every node
    names = [n for n in capacity if is_gpu_resource(n)]
    names += [n for n in allocatable if n not in capacity and is_gpu_resource(n)]
    for name in sorted(names):
        cap = quantity_or_none(capacity.get(name, 0)) or Decimal(0)
        alloc = quantity_or_none(allocatable.get(name, 0)) or Decimal(0)
        result[name] = (float(cap), float(alloc))
    return result
