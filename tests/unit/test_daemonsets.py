"""DaemonSet placement on a node, and how a component pod is doing, from plain API dicts."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.daemonsets import (
    counts,
    daemonset_admits,
    owned_by,
    placement,
    pod_health,
    selection_wants,
    target_node,
    termination_quote,
)


def node(name: str = "gpu-1", labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def ds(spec: dict[str, Any] | None = None, name: str = "nvidia-device-plugin-daemonset",
       namespace: str = "kube-system") -> dict[str, Any]:
    return {"kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "uid": "ds-uid"},
            "spec": {"selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
                     "template": {"metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                                  "spec": {"containers": [{"name": "ctr", "image": "i"}], **(spec or {})}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1}}


PCI = {"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}
FORCED = {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}
AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [PCI]}, {"matchExpressions": [FORCED]}]}}}


# -- admission ----------------------------------------------------------------------------------
def test_node_selector_must_match() -> None:
    d = ds({"nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"}})
    assert daemonset_admits(d, node(labels={"nvidia.com/gpu.deploy.device-plugin": "true"})).ok
    verdict = daemonset_admits(d, node())
    assert not verdict.ok
    assert verdict.labels == ("nvidia.com/gpu.deploy.device-plugin=true",)
    assert "label nvidia.com/gpu.deploy.device-plugin missing" in verdict.reasons[0]


def test_affinity_terms_are_alternatives() -> None:
    d = ds({"affinity": AFFINITY})
    assert daemonset_admits(d, node(labels={"nvidia.com/gpu.present": "true"})).ok
    verdict = daemonset_admits(d, node())
    assert not verdict.ok
    assert verdict.labels == ("feature.node.kubernetes.io/pci-10de.present=true",)
    assert verdict.alternatives == 1
    assert verdict.wants() == "feature.node.kubernetes.io/pci-10de.present=true or 1 alternative(s)"


def test_selection_wants_in_with_several_values_and_exists() -> None:
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]},
                              {"key": "pool", "operator": "Exists"}]}]}}}}
    assert selection_wants(spec, node()) == (("gpu in (a100, h100)", "pool"), 0)
    assert selection_wants({}, node()) == ((), 0)


def test_untolerated_taint_blocks_but_a_cordon_and_pressure_do_not() -> None:
    gpu_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    d = ds({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                             "effect": "NoSchedule"}]})
    verdict = daemonset_admits(d, node(taints=[gpu_taint]))
    assert not verdict.ok and verdict.reasons == ("taint nvidia.com/gpu=true:NoSchedule is not tolerated",)
    exists = ds({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})
    assert daemonset_admits(exists, node(taints=[gpu_taint])).ok
    pressure = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
    assert daemonset_admits(ds(), node(taints=[pressure], unschedulable=True)).ok
    network = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    assert not daemonset_admits(ds(), node(taints=[network])).ok
    assert daemonset_admits(ds({"hostNetwork": True}), node(taints=[network])).ok


def test_malformed_daemonset_admits_everything_without_crashing() -> None:
    assert daemonset_admits({"metadata": {"name": "x"}}, node()).ok
    assert daemonset_admits({"spec": {"template": "nonsense"}}, node()).ok


# -- ownership and target node ------------------------------------------------------------------
def test_owned_by_controller_reference_or_labels() -> None:
    d = ds()
    by_ref = {"metadata": {"namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-uid"}]}}
    other = {"metadata": {"namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet", "uid": "other"}]}}
    by_labels = {"metadata": {"namespace": "kube-system", "labels": {"name": "nvidia-device-plugin-ds"}}}
    elsewhere = {"metadata": {"namespace": "default", "labels": {"name": "nvidia-device-plugin-ds"}}}
    assert owned_by(by_ref, d) and owned_by(by_labels, d)
    assert not owned_by(other, d) and not owned_by(elsewhere, d)


def test_placement_groups_a_pod_list_once_and_lets_it_go_when_its_report_is_done() -> None:
    import gc

    from bot.kube import daemonsets

    d = ds()
    pod = {"metadata": {"namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-uid"}]},
           "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}}
    pods = [pod]
    assert placement(d, pods, node("gpu-1")).pod is pod
    assert any(entry[1] is pods for entry in daemonsets._BY_NODE.values())
    del pods  # the report that read this list is done
    gc.collect()
    later = [dict(pod)]
    assert placement(d, later, node("gpu-1")).pod is later[0]
    # the list still in use is kept, the finished report's is not: a long-running bot does not
    # hold old reports' pods (other tests' lists may be in the cache too)
    kept = [entry[1] for entry in daemonsets._BY_NODE.values()]
    assert any(k is later for k in kept)
    assert not any(len(k) == 1 and k[0] is pod for k in kept)


def test_target_node_from_node_name_or_daemonset_affinity() -> None:
    assert target_node({"spec": {"nodeName": "n1"}}) == "n1"
    pinned = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}}}
    assert target_node(pinned) == "n2"
    assert target_node({}) == ""


# -- pod health ---------------------------------------------------------------------------------
def crash_pod(message: str | None = None) -> dict[str, Any]:
    last: dict[str, Any] = {"exitCode": 1, "reason": "Error"}
    if message is not None:
        last["message"] = message
    return {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "ctr"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                   "containerStatuses": [{"name": "ctr", "ready": False, "restartCount": 12, "image": "i",
                                          "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                                          "lastState": {"terminated": last}}]},
    }


def test_crash_loop_quotes_the_tail_of_the_termination_message() -> None:
    lines = "\n".join(f"line {i}" for i in range(10)) + "\nFailed to initialize NVML: could not load NVML library.\n"
    health = pod_health(crash_pod(lines))
    assert health.crashing and not health.ok and health.restarts == 12
    assert health.status == "CrashLoopBackOff" and health.container == "ctr"
    assert health.message.endswith("Failed to initialize NVML: could not load NVML library.")
    assert health.message.startswith("line 7")


def test_crash_loop_without_message_quotes_reason_and_exit_code() -> None:
    assert pod_health(crash_pod()).message == "Error, exit code 1"


def test_termination_quote_falls_back_to_the_waiting_message() -> None:
    cs = {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"x\""}}}
    assert termination_quote(cs) == 'Back-off pulling image "x"'
    assert termination_quote({}) == ""


def test_init_container_waiting_is_initialising_not_crashing() -> None:
    pod = {
        "spec": {"nodeName": "gpu-1", "initContainers": [{"name": "toolkit-validation"}],
                 "containers": [{"name": "c"}]},
        "status": {"phase": "Pending",
                   "initContainerStatuses": [{"name": "toolkit-validation", "ready": False, "restartCount": 0,
                                              "image": "i", "imageID": "", "state": {"running": {}}}],
                   "containerStatuses": [{"name": "c", "ready": False, "restartCount": 0, "image": "i",
                                          "imageID": "", "state": {"waiting": {"reason": "PodInitializing"}}}]},
    }
    health = pod_health(pod)
    assert health.initialising and not health.crashing and not health.ok
    assert (health.status, health.container) == ("Init:0/1", "toolkit-validation")


def test_unscheduled_pod_quotes_the_scheduler() -> None:
    pod = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available: 3 Insufficient cpu."}]}}
    health = pod_health(pod)
    assert health.status == "Pending" and health.unscheduled.startswith("0/3 nodes")


def test_running_ready_pod_is_ok() -> None:
    pod = {"spec": {"nodeName": "gpu-1", "containers": [{"name": "c"}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "c", "ready": True, "restartCount": 3, "image": "i",
                                             "imageID": "", "state": {"running": {}}}]}}
    health = pod_health(pod)
    assert health.ok and not health.crashing and health.message == ""


# -- placement ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "generation", "state"),
    [
        ({"desiredNumberScheduled": 2, "currentNumberScheduled": 2}, None, "not-scheduled"),
        ({"desiredNumberScheduled": 0}, None, "not-scheduled"),
        ({"desiredNumberScheduled": 3, "currentNumberScheduled": 2}, None, "no-pod"),
        # the controller has not acted on the newest spec yet: its count says nothing about it
        ({"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "observedGeneration": 4}, 5, "no-pod"),
        ({"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "observedGeneration": 5}, 5, "not-scheduled"),
        ({}, None, "no-pod"),  # no status read: the template's reading stands
    ],
)
def test_an_admitted_podless_node_the_controller_does_not_count_is_not_admitted(
    status: dict[str, Any], generation: int | None, state: str
) -> None:
    d = ds({"affinity": AFFINITY})
    d["status"] = status
    if generation is not None:
        d["metadata"]["generation"] = generation
    p = placement(d, [], node(labels={"nvidia.com/gpu.present": "true"}))
    assert p.state == state
    if state == "not-scheduled":
        assert p.admission.reasons[0].startswith("its controller does not count the node (DESIRED ")


@pytest.mark.parametrize(
    ("labels", "pods", "state"),
    [
        ({}, [], "not-scheduled"),
        ({"nvidia.com/gpu.present": "true"}, [], "no-pod"),
        ({"nvidia.com/gpu.present": "true"}, [crash_pod()], "CrashLoopBackOff"),
    ],
)
def test_placement_states(labels: dict[str, str], pods: list[dict[str, Any]], state: str) -> None:
    d = ds({"affinity": AFFINITY})
    d["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberReady": 1}  # one pod short
    for p in pods:
        p["metadata"].update({"namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-uid"}]})
    p = placement(d, pods, node(labels=labels))
    assert p.state == state
    assert not p.ok


def test_placement_prefers_the_pod_that_is_not_terminating() -> None:
    old, new = crash_pod(), crash_pod()
    for pod, name in ((old, "old"), (new, "new")):
        pod["metadata"].update({"name": name, "namespace": "kube-system",
                                "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-uid"}]})
    old["metadata"]["deletionTimestamp"] = "2026-05-07T10:00:00Z"
    assert placement(ds(), [old, new], node()).pod_name == "new"


def test_counts_tolerate_missing_or_odd_status() -> None:
    assert counts({"status": {"desiredNumberScheduled": "x"}}).desired == 0
    text = counts(ds({"nodeSelector": {"a": "b"}})).text()
    assert text == "DESIRED 2 CURRENT 2 READY 1 NODE SELECTOR a=b"
