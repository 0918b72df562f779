"""The GPU-stack checks (device plugin, MIG, GPU Operator, sharing) on hand-built facts.

``tests/unit/test_plugin_checks.py`` feeds them odd objects; these are the cases their scenarios
cover, built small."""

from __future__ import annotations

from typing import Any

from tests.facts import codes, node, only, pod, run

Obj = dict[str, Any]
GPU_LABEL = {"nvidia.com/gpu.present": "true"}
CRASH = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}


def daemonset(name: str, namespace: str = "gpu-operator", *, selector: Obj | None = None) -> Obj:
    return {"kind": "DaemonSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": dict(selector or {}), "containers": [{"name": "c"}]}}},
            "status": {"desiredNumberScheduled": 1, "currentNumberScheduled": 1, "numberReady": 0}}


def ds_pod(ds: Obj, node_name: str, *, crashing: bool = False) -> Obj:
    meta = ds["metadata"]
    p = pod(f"{meta['name']}-x", namespace=meta["namespace"], gpu=None, node=node_name, phase="Running",
            ready=not crashing, waiting=CRASH if crashing else None, labels={"app": meta["name"]},
            owners=[{"kind": "DaemonSet", "name": meta["name"], "uid": meta["uid"], "controller": True}])
    if crashing:
        p["status"]["containerStatuses"][0]["restartCount"] = 12
    return p


# ------------------------------------------------------------------ plugin.daemonset


def test_daemonset_none_installed_on_a_gpu_node_that_offers_nothing() -> None:
    d = only("plugin.daemonset", pod=pod(), nodes=[node("g", gpu=0, labels=GPU_LABEL)])
    assert d.code == "DEVICE_PLUGIN_NOT_RUNNING" and d.params["status"] == "no device-plugin DaemonSet"
    assert d.params["node"] == "g" and d.params["crashing"] == [] and d.params["pod"] == "ml/p"


def test_daemonset_crash_looping_plugin_pod_is_offered_a_restart() -> None:
    ds = daemonset("nvidia-device-plugin-daemonset", "kube-system")
    d = only("plugin.daemonset", pod=pod(), nodes=[node("g", gpu=0, labels=GPU_LABEL)], controllers=[ds],
             component_pods=[ds_pod(ds, "g", crashing=True)])
    assert d.params["crashing"] == [{"namespace": "kube-system", "name": "nvidia-device-plugin-daemonset-x",
                                     "ref": "kube-system/nvidia-device-plugin-daemonset-x", "node": "g"}]


def test_daemonset_selector_the_node_does_not_match_names_the_labels() -> None:
    ds = daemonset("nvidia-device-plugin-daemonset", "kube-system", selector={"nvidia.com/gpu.deploy": "true"})
    d = only("plugin.daemonset", pod=pod(), nodes=[node("g", gpu=0, labels=GPU_LABEL)], controllers=[ds])
    assert "nvidia.com/gpu.deploy" in d.params["label"]


def test_daemonset_silent_when_the_node_offers_its_gpus_or_the_pod_runs() -> None:
    assert run("plugin.daemonset", pod=pod(), nodes=[node("g", labels=GPU_LABEL)]) == []
    assert run("plugin.daemonset", pod=pod(node="g", phase="Running"), nodes=[node("g", gpu=0)]) == []


def test_daemonset_node_status_reports_per_node() -> None:
    found = run("plugin.daemonset", command="node-status", nodes=[node("g", gpu=0, labels=GPU_LABEL)])
    assert [d.subject for d in found] == ["node/g"] and found[0].params["pod"] == ""


# ------------------------------------------------------------------ plugin.mig

MIG_MIXED = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "A100-SXM4-40GB"}


def test_mig_whole_gpu_asked_of_mixed_strategy_nodes() -> None:
    n = node("m", gpu=None, capacity={"nvidia.com/mig-1g.5gb": "7"}, labels=MIG_MIXED)
    d = only("plugin.mig", pod=pod(), nodes=[n])
    assert d.code == "MIG_STRATEGY_MISMATCH" and d.params["strategy"] == "mixed" and d.params["node"] == "m"
    assert "nvidia.com/mig-1g.5gb" in d.params["value"]


def test_mig_layout_stuck_on_a_node() -> None:
    n = node("m", gpu=0, labels={**MIG_MIXED, "nvidia.com/mig.config": "all-1g.5gb",
                                 "nvidia.com/mig.config.state": "failed"})
    d = only("plugin.mig", command="node-status", nodes=[n])
    assert d.params["state"] == "failed" and d.params["pod"] == ""


def test_mig_silent_when_a_node_offers_what_is_asked() -> None:
    assert run("plugin.mig", pod=pod(), nodes=[node("g")]) == []
    n = node("m", gpu=None, capacity={"nvidia.com/mig-1g.5gb": "7"}, labels=MIG_MIXED)
    assert run("plugin.mig", pod=pod(resource="nvidia.com/mig-1g.5gb"), nodes=[n]) == []
    assert run("plugin.mig", command="node-status", nodes=[n]) == []


# ------------------------------------------------------------------ plugin.operator


def test_operator_driver_crash_holds_the_rest_of_the_chain() -> None:
    driver = daemonset("nvidia-driver-daemonset")
    plugin = daemonset("nvidia-device-plugin-daemonset")
    d = only("plugin.operator", pod=pod(), nodes=[node("g", gpu=0, labels=GPU_LABEL)],
             controllers=[driver, plugin], component_pods=[ds_pod(driver, "g", crashing=True)])
    assert d.code == "GPU_OPERATOR_NOT_READY" and d.params["stage"] == "driver" and d.role == ""
    assert d.params["name"] == "nvidia-driver-daemonset" and "plugin" in d.params["waiting"]


def test_operator_silent_without_an_operator_or_when_the_gpus_are_offered() -> None:
    plugin = daemonset("nvidia-device-plugin-daemonset", "kube-system")
    assert run("plugin.operator", pod=pod(), nodes=[node("g", gpu=0, labels=GPU_LABEL)], controllers=[plugin]) == []
    driver = daemonset("nvidia-driver-daemonset")
    assert run("plugin.operator", pod=pod(), nodes=[node("g", labels=GPU_LABEL)], controllers=[driver]) == []


# ------------------------------------------------------------------ plugin.sharing


def test_sharing_renamed_resource() -> None:
    n = node("g", resource="nvidia.com/gpu.shared", gpu=40,
             labels={**GPU_LABEL, "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    d = only("plugin.sharing", pod=pod(), nodes=[n])
    assert d.code == "SHARING_MISCONFIGURED" and d.params["value"] == "nvidia.com/gpu.shared"
    assert d.params["requested"] == "1" and d.params["resource"] == "nvidia.com/gpu"


def test_sharing_more_replicas_than_mps_allows() -> None:
    mps = {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "10"}
    n = node("g", gpu=40, labels={**GPU_LABEL, **mps})
    assert codes("plugin.sharing", pod=pod(gpu=2), nodes=[n]) == ["SHARING_MISCONFIGURED"]


def test_sharing_silent_for_plain_gpus() -> None:
    assert run("plugin.sharing", pod=pod(gpu=2), nodes=[node("g", labels=GPU_LABEL)]) == []


def test_sharing_a_kubelet_refusal_of_a_multi_replica_request() -> None:
    refused = pod(gpu=2, node="g", phase="Failed", status={
        "reason": "UnexpectedAdmissionError",
        "message": "Allocate failed due to rpc error: request for 'nvidia.com/gpu: 2' too large: "
                   "maximum request size for shared resources is 1, which is unexpected"})
    n = node("g", gpu=40, labels={**GPU_LABEL, "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    d = only("plugin.sharing", pod=refused, nodes=[n])
    assert d.params["nodes"] == "g" and d.params["count"] == 1 and "at most 1 per container" in d.params["what"]


def test_operator_auxiliary_operand_failing_in_node_status() -> None:
    ds = {stage: daemonset(name) for stage, name in (
        ("driver", "nvidia-driver-daemonset"), ("toolkit", "nvidia-container-toolkit-daemonset"),
        ("validator", "nvidia-operator-validator"), ("plugin", "nvidia-device-plugin-daemonset"),
        ("gfd", "gpu-feature-discovery"))}
    healthy = [ds_pod(d, "g") for stage, d in ds.items() if stage != "gfd"]
    found = run("plugin.operator", command="node-status", nodes=[node("g", labels=GPU_LABEL)],
                controllers=list(ds.values()), component_pods=[*healthy, ds_pod(ds["gfd"], "g", crashing=True)])
    assert [(d.params["stage"], d.role) for d in found] == [("gpu-feature-discovery", "auxiliary")]
