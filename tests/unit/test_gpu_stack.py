"""Naming the GPU node stack from API objects: plugins, operator stages, MIG layout, sharing."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.gpu_stack import (
    SHARED_TOO_LARGE,
    first_failing,
    is_shared,
    mig_layout,
    nfd_workers,
    operand_stage,
    operator_operands,
    plugin_daemonsets,
    plugin_kind,
    served_families,
    shared_twin,
    sharing,
    stage_states,
)


def ds(name: str, namespace: str = "gpu-operator", selector: dict[str, str] | None = None,
       labels: dict[str, str] | None = None, init: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if selector:
        spec["nodeSelector"] = selector
    if init:
        spec["initContainers"] = [{"name": n} for n in init]
    return {"kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels or {}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
            "status": {"desiredNumberScheduled": 1}}


def node(labels: dict[str, str] | None = None, capacity: dict[str, str] | None = None,
         allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = allocatable if allocatable is not None else capacity or {}
    return {"metadata": {"name": "gpu-1", "labels": labels or {}},
            "status": {"capacity": capacity or {}, "allocatable": alloc}}


def pod_of(d: dict[str, Any], status: dict[str, Any], node_name: str = "gpu-1") -> dict[str, Any]:
    return {"metadata": {"name": d["metadata"]["name"] + "-x", "namespace": d["metadata"]["namespace"],
                         "ownerReferences": [{"kind": "DaemonSet", "uid": d["metadata"]["uid"]}]},
            "spec": {"nodeName": node_name, "containers": [{"name": "main"}],
                     "initContainers": d["spec"]["template"]["spec"].get("initContainers", [])},
            "status": status}


READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
         "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "state": {"running": {}}}]}
CRASH = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
         "containerStatuses": [{"name": "main", "ready": False, "restartCount": 5,
                                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                                "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}


def waiting_in(container: str) -> dict[str, Any]:
    return {"phase": "Pending",
            "initContainerStatuses": [{"name": container, "ready": False, "restartCount": 0, "state": {"running": {}}}],
            "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0,
                                   "state": {"waiting": {"reason": "PodInitializing"}}}]}


# -- plugins ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("nvidia-device-plugin-daemonset", "nvidia"),
        ("nvdp-nvidia-device-plugin", "nvidia"),
        ("nvidia-gpu-device-plugin-large-cos", "nvidia"),
        ("hami-device-plugin", "hami"),
        ("qgpu-manager", "qgpu"),
        ("gpu-manager-daemonset", "gpu-manager"),
        ("nvidia-device-plugin-mps-control-daemon", None),
        ("nvidia-device-plugin-node-feature-discovery-worker", None),
        ("nvidia-device-plugin-gpu-feature-discovery", None),
        ("nvidia-driver-daemonset", None),
    ],
)
def test_plugin_kind(name: str, kind: str | None) -> None:
    found = plugin_kind(ds(name))
    assert (found.key if found else None) == kind


def test_plugin_daemonsets_by_family_ignore_deployments() -> None:
    deployment = {**ds("qgpu-manager"), "kind": "Deployment"}
    controllers = [ds("nvidia-device-plugin-daemonset"), ds("qgpu-manager", "kube-system"), deployment]
    assert [c["metadata"]["name"] for c in plugin_daemonsets(controllers, "qgpu")] == ["qgpu-manager"]
    assert len(plugin_daemonsets(controllers)) == 2


def test_served_families_ignore_zero_capacity_left_behind() -> None:
    gone = node(capacity={"nvidia.com/gpu": "0"})
    assert served_families(gone) == set()
    assert served_families(node(capacity={"tke.cloud.tencent.com/qgpu-core": "400"})) == {"qgpu"}


def test_nfd_workers() -> None:
    names = [c["metadata"]["name"] for c in nfd_workers(
        [ds("gpu-operator-1646339147-node-feature-discovery-worker"), ds("nvidia-device-plugin-daemonset")])]
    assert names == ["gpu-operator-1646339147-node-feature-discovery-worker"]


# -- operator -----------------------------------------------------------------------------------
def test_standalone_plugin_is_not_an_operator_install() -> None:
    assert operator_operands([ds("nvidia-device-plugin-daemonset", "kube-system")]) == {}


def test_operator_operands_from_the_operator_namespace() -> None:
    controllers = [ds("nvidia-driver-daemonset"), ds("nvidia-device-plugin-daemonset"),
                   ds("nvidia-device-plugin-daemonset", "kube-system"), ds("nvidia-dcgm-exporter"), ds("nvidia-dcgm")]
    operands = operator_operands(controllers)
    assert set(operands) == {"driver", "plugin", "dcgm-exporter", "dcgm"}
    assert operands["plugin"]["metadata"]["namespace"] == "gpu-operator"


def test_operand_stage_names() -> None:
    assert operand_stage(ds("nvidia-driver-daemonset-415.92.202311241643-0")) == "driver"
    assert operand_stage(ds("nvidia-dcgm-exporter")) == "dcgm-exporter"
    assert operand_stage(ds("nvidia-driver-daemonsetx")) is None


def chain() -> dict[str, dict[str, Any]]:
    return {
        "driver": ds("nvidia-driver-daemonset"),
        "toolkit": ds("nvidia-container-toolkit-daemonset", init=["driver-validation"]),
        "validator": ds("nvidia-operator-validator", init=["driver-validation", "toolkit-validation",
                                                           "cuda-validation", "plugin-validation"]),
        "plugin": ds("nvidia-device-plugin-daemonset", init=["toolkit-validation"]),
    }


def test_first_failing_is_the_earliest_stage() -> None:
    ops = chain()
    pods = [pod_of(ops["driver"], CRASH), pod_of(ops["toolkit"], waiting_in("driver-validation")),
            pod_of(ops["validator"], waiting_in("driver-validation")),
            pod_of(ops["plugin"], waiting_in("toolkit-validation"))]
    first = first_failing(stage_states(ops, pods, node()))
    assert first is not None and first.stage == "driver"


def test_validator_waiting_for_the_plugin_points_at_the_plugin() -> None:
    ops = chain()
    validator = {"phase": "Pending", "initContainerStatuses": [
        {"name": n, "ready": True, "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}
        for n in ("driver-validation", "toolkit-validation", "cuda-validation")] + [
        {"name": "plugin-validation", "ready": False, "restartCount": 0, "state": {"running": {}}}]}
    pods = [pod_of(ops["driver"], READY), pod_of(ops["toolkit"], READY), pod_of(ops["validator"], validator),
            pod_of(ops["plugin"], CRASH)]
    first = first_failing(stage_states(ops, pods, node()))
    assert first is not None and first.stage == "plugin"


def test_deploy_label_not_true_switches_a_stage_off() -> None:
    ops = {"driver": ds("nvidia-driver-daemonset", selector={"nvidia.com/gpu.deploy.driver": "true"})}
    states = stage_states(ops, [], node({"nvidia.com/gpu.deploy.driver": "pre-installed"}))
    assert states[0].disabled and states[0].ok
    assert first_failing(states) is None
    missing = stage_states(ops, [], node())
    assert not missing[0].ok and missing[0].placement.state == "not-scheduled"


# -- MIG ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("labels", "capacity", "layout"),
    [
        ({}, {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "7"}, "mixed"),
        ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}, {"nvidia.com/gpu": "7"}, "single"),
        ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, {"nvidia.com/gpu": "8"}, "none"),
        ({}, {"nvidia.com/gpu": "0"}, "unknown"),
    ],
)
def test_mig_layout(labels: dict[str, str], capacity: dict[str, str], layout: str) -> None:
    assert mig_layout(node(labels, capacity)) == layout


# -- sharing ------------------------------------------------------------------------------------
def test_shared_twin() -> None:
    assert shared_twin("nvidia.com/gpu") == "nvidia.com/gpu.shared"
    assert shared_twin("nvidia.com/gpu.shared") == "nvidia.com/gpu"
    assert shared_twin("nvidia.com/mig-1g.10gb") is None


def test_sharing_from_labels_and_resources() -> None:
    assert sharing(node({"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"})) == ("mps", 4)
    assert sharing(node({"nvidia.com/gpu.replicas": "4"})) == ("time-slicing", 4)
    assert sharing(node(capacity={"nvidia.com/gpu.shared": "4"})) == ("time-slicing", 1)
    assert sharing(node({"nvidia.com/gpu.replicas": "four"})) == ("none", 1)


def test_is_shared() -> None:
    renamed = node({"nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu.shared": "4", "nvidia.com/gpu": "0"})
    assert is_shared(renamed, "nvidia.com/gpu.shared") and not is_shared(renamed, "nvidia.com/gpu")
    sliced = node({"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"},
                  {"nvidia.com/gpu": "16"})
    assert is_shared(sliced, "nvidia.com/gpu")
    assert not is_shared(node(capacity={"nvidia.com/gpu": "8"}), "nvidia.com/gpu")


@pytest.mark.parametrize(
    "text",
    [
        "Allocate failed due to rpc error: code = Unknown desc = request for 'nvidia.com/gpu: 2' too large: "
        "maximum request size for shared resources is 1, which is unexpected",
        'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu": '
        "invalid request: maximum request size for shared resources is 1; found 2, which is unexpected",
    ],
)
def test_shared_refusal_in_both_plugin_wordings(text: str) -> None:
    assert SHARED_TOO_LARGE.search(text)


def test_other_admission_errors_are_not_a_shared_refusal() -> None:
    assert not SHARED_TOO_LARGE.search("Allocate failed due to rpc error: code = Unavailable desc = error reading "
                                       "from server: EOF, which is unexpected")
