"""Workload, namespace and qGPU prerequisite checks on hand-built facts."""

from __future__ import annotations

from typing import Any

from bot.engine.facts import QuotaFacts
from tests.facts import codes, event, namespace, node, only, pod, run, slim

QCORE = "tke.cloud.tencent.com/qgpu-core"
POLICY = "tke.cloud.tencent.com/qgpu-schedule-policy"
DEPLOY: dict[str, Any] = {"kind": "Deployment", "metadata": {"name": "app", "namespace": "ml"},
                          "spec": {"replicas": 2}, "status": {"replicas": 0, "readyReplicas": 0}}
RS: dict[str, Any] = {"kind": "ReplicaSet", "metadata": {"name": "app-1", "namespace": "ml"},
                      "spec": {"replicas": 2}, "status": {"replicas": 0}}
QUOTA_MSG = ('Error creating: pods "app-1-x" is forbidden: exceeded quota: gpu-quota, requested: '
             "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4")
HOOK_MSG = ('Error creating: admission webhook "validate.kyverno.svc" denied the request: '
            "policy require-labels: label team is required")


def qgpu_pod(**kwargs: Any) -> dict[str, Any]:
    return pod(resource=QCORE, gpu=50, **kwargs)


def manager(phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": "qgpu-manager-abc", "namespace": "kube-system"}, "spec": {"nodeName": "q"},
            "status": {"phase": phase}}


def operator(tag: str) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": "qgpu-operator", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "op", "image": f"ccr.io/tke/qgpu-operator:{tag}"}]}}}}


# ------------------------------------------------------------------ workload.quota


def test_quota_refusal_on_the_replicaset_of_the_asked_deployment() -> None:
    quota = {"metadata": {"name": "gpu-quota"}, "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
             "status": {"hard": {"requests.nvidia.com/gpu": "4"}, "used": {"requests.nvidia.com/gpu": "4"}}}
    d = only("workload.quota", kind="Deployment", name="app", workload=DEPLOY, owners=[RS],
             owner_events=[event(QUOTA_MSG, reason="FailedCreate", kind="ReplicaSet", name="app-1",
                                 component="replicaset-controller")],
             quotas=QuotaFacts(quotas=[quota]))
    assert d.code == "QUOTA_EXCEEDED" and d.role == ""
    assert d.params["quota"] == "gpu-quota" and d.params["resource"] == "requests.nvidia.com/gpu"
    assert d.params["workload"] == "deployment/app"


def test_quota_nothing_for_a_satisfied_workload_or_without_a_refusal() -> None:
    happy = {**DEPLOY, "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}}
    e = event(QUOTA_MSG, reason="FailedCreate", kind="ReplicaSet", name="app-1")
    assert run("workload.quota", kind="Deployment", name="app", workload=happy, owners=[RS], owner_events=[e]) == []
    assert run("workload.quota", kind="Deployment", name="app", workload=DEPLOY, owners=[RS]) == []


# ------------------------------------------------------------------ workload.webhook


def test_webhook_denial_on_an_owner() -> None:
    e = event(HOOK_MSG, reason="FailedCreate", kind="ReplicaSet", name="app-1")
    d = only("workload.webhook", kind="Deployment", name="app", workload=DEPLOY, owner_events=[e])
    assert d.code == "SCHED_WEBHOOK_DENIED" and d.params["webhook"] == "validate.kyverno.svc"
    assert d.params["message"].startswith("policy require-labels") and d.subject == "replicaset/ml/app-1"


def test_webhook_nothing_without_a_denial_or_a_target() -> None:
    assert run("workload.webhook", pod=pod(), events=[event("0/1 nodes are available")]) == []
    assert run("workload.webhook", command="node-status") == []


# ------------------------------------------------------------------ pod.unexplained


def test_unexplained_a_pod_that_does_not_run() -> None:
    p = pod(node="g1", phase="Running", ready=False)
    d = only("pod.unexplained", pod=p)
    assert d.code == "POD_NOT_RUNNING_UNEXPLAINED" and d.params["pod"] == "ml/p" and d.params["namespace"] == "ml"


def test_unexplained_a_workload_without_pods() -> None:
    d = only("pod.unexplained", kind="Deployment", name="app", workload=DEPLOY)
    assert d.params["pod"] == "deployment ml/app" and d.params["status"] == "0 of 2 ready"


def test_unexplained_silent_for_running_finished_or_missing_targets() -> None:
    assert run("pod.unexplained", pod=pod(node="g1", phase="Running", ready=True)) == []
    assert run("pod.unexplained", pod=pod(node="g1", phase="Succeeded")) == []
    assert run("pod.unexplained", kind="Pod", name="gone") == []


# ------------------------------------------------------------------ ns.system_classified


def test_system_classified_namespace_without_the_labels_a_working_one_has() -> None:
    spaces = [namespace("ml"), namespace("team", labels={"tenant": "yes"})]
    d = only("ns.system_classified", pod=qgpu_pod(), namespaces=spaces,
             node_pods={"q": [slim("w", "q", namespace="team", resource=QCORE, gpu=50)]})
    assert d.code == "NS_SYSTEM_CLASSIFIED"
    assert d.params == {"namespace": "ml", "good_namespace": "team", "copy_from": "team", "count": 1,
                        "missing_labels": "tenant=yes"}


def test_system_classified_not_for_labelled_builtin_or_tke_style_namespaces() -> None:
    assert run("ns.system_classified", pod=qgpu_pod(), namespaces=[namespace("ml", labels={"x": "y"})]) == []
    assert run("ns.system_classified", pod=qgpu_pod(namespace="default"), namespace="default",
               namespaces=[namespace("default")]) == []
    assert run("ns.system_classified", pod=qgpu_pod(), namespaces=[namespace("ml")],
               nodes=[node("q", labels={POLICY: "fixed-share"})]) == []
    assert run("ns.system_classified", pod=pod(), namespaces=[namespace("ml")]) == []


def test_system_classified_without_a_working_namespace_to_copy_from() -> None:
    d = only("ns.system_classified", pod=qgpu_pod(), namespaces=[namespace("ml")])
    assert d.params["good_namespace"] == "(none found)" and d.params["copy_from"] == ""


# ------------------------------------------------------------------ qgpu.operator_version


def test_operator_version_older_than_supported() -> None:
    d = only("qgpu.operator_version", pod=qgpu_pod(), controllers=[operator("v2.9.1")])
    assert d.params == {"value": "2.9.1"} and d.subject == "deployment/kube-system/qgpu-operator"


def test_operator_version_current_unparsable_or_not_asked() -> None:
    assert run("qgpu.operator_version", pod=qgpu_pod(), controllers=[operator("v3.0.2")]) == []
    assert run("qgpu.operator_version", pod=qgpu_pod(), controllers=[operator("latest")]) == []
    assert run("qgpu.operator_version", pod=pod(), controllers=[operator("v1.0")]) == []


# ------------------------------------------------------------------ qgpu.prereqs


def test_prereqs_no_manager_and_no_qgpu_node() -> None:
    found = set(codes("qgpu.prereqs", pod=qgpu_pod(), nodes=[node("g")], namespaces=[namespace("ml")]))
    assert {"QGPU_OPERATOR_MISSING", "QGPU_NODE_NO_CAPACITY", "QGPU_NS_POLICY_MISSING"} == found


def test_prereqs_policy_invalid_on_the_namespace_or_the_node() -> None:
    qnode = node("q", resource=QCORE, gpu=400)
    d = only("qgpu.prereqs", pod=qgpu_pod(), nodes=[qnode], component_pods=[manager()],
             namespaces=[namespace("ml", labels={POLICY: "sometimes"})])
    assert d.code == "QGPU_NS_POLICY_INVALID" and d.params["on_namespace"] is True and d.params["value"] == "sometimes"
    bad = node("q", resource=QCORE, gpu=400, labels={POLICY: "wrong"})
    d = only("qgpu.prereqs", pod=qgpu_pod(), nodes=[bad], component_pods=[manager()], namespaces=[namespace("ml")])
    assert d.params["on_namespace"] is False


def test_prereqs_all_in_place_says_nothing() -> None:
    qnode = node("q", resource=QCORE, gpu=400)
    spaces = [namespace("ml", labels={POLICY: "fixed-share"})]
    assert run("qgpu.prereqs", pod=qgpu_pod(), nodes=[qnode], component_pods=[manager()], namespaces=spaces) == []
    tke = node("q", resource=QCORE, gpu=400, labels={POLICY: "bs"})
    assert run("qgpu.prereqs", pod=qgpu_pod(), nodes=[tke], component_pods=[manager()],
               namespaces=[namespace("ml")]) == []
    assert run("qgpu.prereqs", pod=pod(), nodes=[node("g")]) == []
