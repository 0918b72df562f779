"""Quantities, effective GPU requests, spec problems and node GPU capacity."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bot.kube.gpu import is_gpu_node
from bot.kube.resources import (
    QGPU_CORE,
    QGPU_MEMORY,
    container_gpu_resources,
    gpu_family,
    is_gpu_resource,
    is_node_advertised,
    node_gpu_capacity,
    parse_quantity,
    pod_gpu_requests,
    pod_node_gpu_requests,
    pod_requests,
    spec_problems,
    vgpu_families,
)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("100m", Decimal("0.1")),
        ("1", Decimal(1)),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("1Gi", Decimal(2**30)),
        ("16Ki", Decimal(16 * 1024)),
        ("512Mi", Decimal(512 * 2**20)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2E", Decimal(2 * 10**18)),  # E alone is the exa suffix, not an exponent
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("250n", Decimal("0.00000025")),
        ("0", Decimal(0)),
        ("+3", Decimal(3)),
        (" 20 ", Decimal(20)),
        (20, Decimal(20)),
        (0.5, Decimal("0.5")),
    ],
)
def test_parse_quantity(text: Any, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1Z", "1e", "1.2.3", "Gi", "1 Gi", "1gi", True, float("nan")])
def test_parse_quantity_rejects(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize(
    "name,family",
    [
        ("nvidia.com/gpu", "nvidia"),
        ("nvidia.com/gpu.shared", "nvidia"),
        ("nvidia.com/mig-1g.5gb", "nvidia"),
        ("nvidia.com/mig-3g.40gb", "nvidia"),
        (QGPU_CORE, "qgpu"),
        (QGPU_MEMORY, "qgpu"),
        ("amd.com/gpu", "amd"),
        ("gpu.intel.com/i915", "intel"),
        ("nvidia.com/gpumem", "hami"),
        ("nvidia.com/gpumem-percentage", "hami"),
        ("nvidia.com/gpucores", "hami"),
        ("tencent.com/vcuda-core", "vcuda"),
        ("tencent.com/vcuda-memory", "vcuda"),
        ("nvidia.com/gpumemory", None),
        ("tencent.com/vcuda", None),
        ("cpu", None),
        ("memory", None),
        ("nvidia.com/gpux", None),
        ("example.com/nvidia.com/gpu", None),
    ],
)
def test_gpu_resources(name: str, family: str | None) -> None:
    assert gpu_family(name) == family
    assert is_gpu_resource(name) is (family is not None)


def _c(
    name: str = "c",
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "resources": resources, **extra}


def _pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init is not None:
        spec["initContainers"] = init
    return {"metadata": {"name": "p", "namespace": "ai"}, "spec": spec}


def test_requests_default_to_limits() -> None:
    assert container_gpu_resources(_c(limits={"nvidia.com/gpu": 1, "cpu": "2"})) == {"nvidia.com/gpu": 1.0}
    both = _c(requests={"cpu": "500m"}, limits={"cpu": "2", QGPU_CORE: 20, QGPU_MEMORY: "5"})
    assert container_gpu_resources(both) == {QGPU_CORE: 20.0, QGPU_MEMORY: 5.0}
    assert pod_requests(_pod(both))["cpu"] == Decimal("0.5")  # an explicit request wins over the limit


def test_pod_request_sums_containers_and_takes_max_with_init() -> None:
    pod = _pod(
        _c("a", limits={"nvidia.com/gpu": 1}),
        _c("b", limits={"nvidia.com/gpu": 2}),
        init=[_c("warm", limits={"nvidia.com/gpu": 4}), _c("fetch", requests={"cpu": "1"})],
    )
    assert pod_gpu_requests(pod) == {"nvidia.com/gpu": 4.0}
    smaller_init = _pod(
        _c("a", limits={"nvidia.com/gpu": 1}),
        _c("b", limits={"nvidia.com/gpu": 2}),
        init=[_c("warm", limits={"nvidia.com/gpu": 1})],
    )
    assert pod_gpu_requests(smaller_init) == {"nvidia.com/gpu": 3.0}


def test_sidecar_init_containers_add_to_the_pod() -> None:
    sidecar = _c("proxy", requests={"cpu": "1"}, restartPolicy="Always")
    pod = _pod(_c("app", requests={"cpu": "2"}), init=[sidecar, _c("setup", requests={"cpu": "2.5"})])
    # app+sidecar = 3; setup runs beside the sidecar = 3.5
    assert pod_requests(pod)["cpu"] == Decimal("3.5")


def test_pod_without_gpu_and_with_zero_gpu() -> None:
    assert pod_gpu_requests(_pod(_c(requests={"cpu": "1"}))) == {}
    assert pod_gpu_requests(_pod(_c(limits={"nvidia.com/gpu": 0}))) == {}
    assert pod_gpu_requests({}) == {}


def test_unparseable_values_are_skipped_not_raised() -> None:
    assert container_gpu_resources(_c(limits={QGPU_CORE: "lots"})) == {}


def _codes(pod: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.code, p.container) for p in spec_problems(pod)]


def test_mixed_gpu_resources() -> None:
    pod = _pod(_c("torch", limits={"nvidia.com/gpu": 1, QGPU_CORE: 20, QGPU_MEMORY: 5}))
    problems = spec_problems(pod)
    assert [(p.code, p.container) for p in problems] == [("SPEC_MIXED_GPU_RESOURCES", "torch")]
    assert "nvidia.com/gpu" in problems[0].detail and QGPU_CORE in problems[0].detail
    mig = _pod(_c("torch", limits={"nvidia.com/mig-1g.5gb": 1, QGPU_CORE: 20}))
    assert ("SPEC_MIXED_GPU_RESOURCES", "torch") in _codes(mig)
    # Different containers may use different kinds.
    assert _codes(_pod(_c("a", limits={"nvidia.com/gpu": 1}), _c("b", limits={QGPU_CORE: 20}))) == []


def test_zero_cpu_memory_from_field_notes() -> None:
    pod = _pod(_c("torch", requests={"cpu": "0", "memory": "0"}, limits={"cpu": "0", "memory": "1Gi"}))
    problems = spec_problems(pod)
    assert [p.code for p in problems] == ["SPEC_ZERO_CPU_MEMORY"] * 3
    assert [p.detail for p in problems] == [
        "requests.cpu is '0'",
        "requests.memory is '0'",
        "limits.cpu is '0'",
    ]
    assert _codes(_pod(_c(requests={"cpu": "0m"}))) == [("SPEC_ZERO_CPU_MEMORY", "c")]
    assert _codes(_pod(_c(requests={"cpu": "100m", "memory": "1Gi"}))) == []


@pytest.mark.parametrize("core", [5, 20, 95, 100, 200, 300, "50"])
def test_valid_qgpu_core(core: Any) -> None:
    assert _codes(_pod(_c(limits={QGPU_CORE: core, QGPU_MEMORY: 5}))) == []


@pytest.mark.parametrize("core", [0, 3, 21, 101, 150, 250, "12.5", "-5", "x"])
def test_invalid_qgpu_core(core: Any) -> None:
    assert _codes(_pod(_c(limits={QGPU_CORE: core, QGPU_MEMORY: 5}))) == [("SPEC_QGPU_INVALID", "c")]


@pytest.mark.parametrize("memory", [0, "1.5", "-1", "1Gi"])
def test_invalid_qgpu_memory(memory: Any) -> None:
    assert _codes(_pod(_c(limits={QGPU_CORE: 20, QGPU_MEMORY: memory}))) == [("SPEC_QGPU_INVALID", "c")]


def test_qgpu_requests_must_equal_limits() -> None:
    pod = _pod(_c(requests={QGPU_CORE: 10}, limits={QGPU_CORE: 20, QGPU_MEMORY: 4}))
    problems = spec_problems(pod)
    assert [p.code for p in problems] == ["SPEC_QGPU_INVALID"]
    assert "requests 10 differ from limits 20" in problems[0].detail
    same = _pod(_c(requests={QGPU_CORE: "20"}, limits={QGPU_CORE: 20, QGPU_MEMORY: 4}))
    assert _codes(same) == []


def test_qgpu_memory_without_core() -> None:
    problems = spec_problems(_pod(_c(limits={QGPU_MEMORY: 4})))
    assert [p.detail for p in problems] == ["qgpu-memory is set without qgpu-core"]


def test_init_containers_are_checked_too() -> None:
    pod = _pod(_c("app", limits={QGPU_CORE: 20}), init=[_c("init", requests={"memory": "0"})])
    assert _codes(pod) == [("SPEC_ZERO_CPU_MEMORY", "init")]


def _node(capacity: dict[str, Any], allocatable: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "n"},
        "status": {"capacity": capacity, "allocatable": allocatable or capacity},
    }


def test_node_gpu_capacity() -> None:
    node = _node(
        {"cpu": "96", QGPU_CORE: "200", QGPU_MEMORY: "62", "nvidia.com/gpu": "2"},
        {"cpu": "95", QGPU_CORE: "200", QGPU_MEMORY: "60"},
    )
    assert node_gpu_capacity(node) == {
        "nvidia.com/gpu": (2.0, 0.0),
        QGPU_CORE: (200.0, 200.0),
        QGPU_MEMORY: (62.0, 60.0),
    }
    assert is_gpu_node(node)


def test_is_gpu_node() -> None:
    assert not is_gpu_node(_node({"cpu": "8", "memory": "32Gi"}))
    assert is_gpu_node(_node({"nvidia.com/gpu": "0"}))  # plugin registered, no healthy device
    assert not is_gpu_node({})
    assert node_gpu_capacity({}) == {}


def test_a_gpu_node_is_known_by_label_or_component_even_without_capacity() -> None:
    """A node whose device plugin never registered advertises nothing, yet it is a GPU node."""
    labelled = {"metadata": {"name": "g1", "labels": {"nvidia.com/gpu.present": "true"}}, "status": {"capacity": {}}}
    gke = {"metadata": {"name": "g2", "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}}}
    plain = {"metadata": {"name": "c1", "labels": {"nvidia.com/gpu.present": "false"}}}
    assert is_gpu_node(labelled)
    assert is_gpu_node(gke)
    assert not is_gpu_node(plain)
    assert is_gpu_node(plain, component_nodes={"c1"})  # runs a device-plugin pod


def test_vgpu_resources_are_gpu_requests() -> None:
    """HAMi's and tkestack's vGPU resources count as GPU asks (no more "asks for no GPU")."""
    hami = _pod(_c(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": "3000", "nvidia.com/gpucores": 30, "cpu": "1"}))
    assert pod_gpu_requests(hami) == {"nvidia.com/gpu": 1.0, "nvidia.com/gpumem": 3000.0, "nvidia.com/gpucores": 30.0}
    assert vgpu_families(hami) == {"hami"}
    vcuda = _pod(_c(limits={"tencent.com/vcuda-core": 50, "tencent.com/vcuda-memory": 32}))
    assert pod_gpu_requests(vcuda) == {"tencent.com/vcuda-core": 50.0, "tencent.com/vcuda-memory": 32.0}
    assert vgpu_families(vcuda) == {"vcuda"}
    assert vgpu_families(_pod(_c(limits={"nvidia.com/gpu": 1}))) == set()
    assert not spec_problems(hami)  # nvidia.com/gpu beside gpumem is one system, not a mix


def test_node_advertised_leaves_out_hami_slices() -> None:
    """No node advertises nvidia.com/gpumem: only nvidia.com/gpu decides candidate nodes."""
    assert is_node_advertised("nvidia.com/gpu")
    assert is_node_advertised("tencent.com/vcuda-core")
    assert not is_node_advertised("nvidia.com/gpumem")
    assert not is_node_advertised("nvidia.com/gpumem-percentage")
    assert not is_node_advertised("cpu")
    pod = _pod(_c(limits={"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 50, "nvidia.com/gpucores": 40}))
    assert pod_node_gpu_requests(pod) == {"nvidia.com/gpu": 2.0}


def test_vgpu_node_capacity() -> None:
    node = {"status": {"capacity": {"tencent.com/vcuda-core": "400", "tencent.com/vcuda-memory": "512", "cpu": "72"},
                       "allocatable": {"tencent.com/vcuda-core": "400", "tencent.com/vcuda-memory": "512"}}}
    assert node_gpu_capacity(node) == {"tencent.com/vcuda-core": (400.0, 400.0),
                                       "tencent.com/vcuda-memory": (512.0, 512.0)}
    assert is_gpu_node(node)


def test_capacities_are_worked_out_once_per_node_within_a_question_and_not_kept_after() -> None:
    from bot.kube.resources import capacities_remembered, node_gpu_capacity

    a = {"status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "7"}}}
    b = {"status": {"capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}}}
    with capacities_remembered():
        first = node_gpu_capacity(a)
        assert node_gpu_capacity(a) is first
        assert node_gpu_capacity(b) == {"nvidia.com/gpu": (4.0, 4.0)}
        assert first == {"nvidia.com/gpu": (8.0, 7.0)}
    assert node_gpu_capacity(a) is not node_gpu_capacity(a)  # no memory outside a question
    assert node_gpu_capacity(a) == {"nvidia.com/gpu": (8.0, 7.0)}
