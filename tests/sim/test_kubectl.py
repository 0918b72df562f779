"""Real kubectl 1.32 works against the simulator through the generated kubeconfig."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable

from bot.sim.scenario import load_scenario
from tests.sim.conftest import SimKube, scenario_file

DEMO = "gpu-demo-6c9f7d-tx2lq"


def kubectl(sim: SimKube, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(sim.kubeconfig), *args], capture_output=True, text=True, timeout=30
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_get_pods_json_and_table(kube: SimKube) -> None:
    items = json.loads(kubectl(kube, "get", "pods", "-A", "-o", "json").stdout)["items"]
    assert sorted(p["metadata"]["name"] for p in items) == [DEMO, "qgpu-manager-7xk2p", "qgpu-manager-m9q4d"]
    lines = kubectl(kube, "get", "pods", "-A").stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["ai", DEMO, "1/1", "Running"] and len(lines) == 4
    nodes = kubectl(kube, "get", "nodes").stdout
    assert "tcs-10-29-25-5" in nodes and "tcs-10-29-25-6" in nodes
    on_node = kubectl(
        kube, "get", "pods", "-A", "--field-selector", "spec.nodeName=tcs-10-29-25-6", "-o", "name"
    )
    assert on_node.stdout.split() == ["pod/qgpu-manager-m9q4d"]
    assert kube.server.writes == []


def test_get_events_by_involved_object(start_kube: Callable[..., SimKube]) -> None:
    sim = start_kube("zombie-checkpoint")
    out = kubectl(
        sim, "get", "events", "-n", "ai", "--field-selector", "involvedObject.name=gpu-full-5d8c6-q7wz2"
    )
    assert "FailedScheduling" in out.stdout or "gpu-full-5d8c6-q7wz2" in out.stdout
    events = json.loads(
        kubectl(
            sim,
            "get",
            "ev",
            "-n",
            "ai",
            "--field-selector",
            "involvedObject.name=gpu-full-5d8c6-q7wz2",
            "-o",
            "json",
        ).stdout
    )["items"]
    assert [e["reason"] for e in events] == ["FailedScheduling"]


def test_describe_node_and_pod(start_kube: Callable[..., SimKube]) -> None:
    sim = start_kube("zombie-checkpoint")
    node = kubectl(sim, "describe", "node", "tcs-10-29-25-5").stdout
    assert "Name:               tcs-10-29-25-5" in node and "Non-terminated Pods:" in node
    pod = kubectl(sim, "describe", "pod", "gpu-full-5d8c6-q7wz2", "-n", "ai").stdout
    assert "Status:" in pod and "FailedScheduling" in pod
    assert (
        "/api/v1/events" in sim.server.stats.per_path
        or "/api/v1/namespaces/ai/events" in sim.server.stats.per_path
    )


def test_cordon_uncordon_label(kube: SimKube) -> None:
    assert "cordoned" in kubectl(kube, "cordon", "tcs-10-29-25-5").stdout
    assert kube.server.store.find("Node", "tcs-10-29-25-5")["spec"].get("unschedulable") is True
    assert "Ready,SchedulingDisabled" in kubectl(kube, "get", "node", "tcs-10-29-25-5").stdout
    kubectl(kube, "uncordon", "tcs-10-29-25-5")
    assert not kube.server.store.find("Node", "tcs-10-29-25-5")["spec"].get("unschedulable")
    kubectl(
        kube,
        "label",
        "namespace",
        "ai",
        "tke.cloud.tencent.com/qgpu-schedule-policy=best-effort",
        "--overwrite",
    )
    labels = kube.server.store.find("Namespace", "ai")["metadata"]["labels"]
    assert labels["tke.cloud.tencent.com/qgpu-schedule-policy"] == "best-effort"
    assert [w.verb for w in kube.server.writes] == ["PATCH", "PATCH", "PATCH"]


def test_delete_pod_and_rollout_restart(kube: SimKube) -> None:
    out = kubectl(kube, "delete", "pod", "qgpu-manager-m9q4d", "-n", "qgpu")
    assert 'pod "qgpu-manager-m9q4d" deleted' in out.stdout
    assert kube.server.store.find("Pod", "qgpu-manager-m9q4d", "qgpu") is None
    kubectl(kube, "rollout", "restart", "daemonset", "-n", "qgpu", "qgpu-manager")
    ds = kube.server.store.find("DaemonSet", "qgpu-manager", "qgpu")
    assert "kubectl.kubernetes.io/restartedAt" in ds["spec"]["template"]["metadata"]["annotations"]
    assert ds["metadata"]["generation"] == 2
    assert kubectl(kube, "get", "pod", "nope", "-n", "qgpu", check=False).stderr.strip() == (
        'Error from server (NotFound): pods "nope" not found'
    )


def test_kubectl_exec_over_websocket(kube: SimKube) -> None:
    result = kubectl(kube, "exec", "-n", "ai", DEMO, "--", "nvidia-smi", check=False)
    assert result.returncode == 255 and "Failed to initialize NVML: Unknown Error" in result.stdout
    assert (
        kubectl(kube, "exec", "-n", "ai", DEMO, "-c", "torch", "--", "cat", "/proc/1/comm").stdout
        == "sleep\n"
    )


def test_get_resourcequota_by_short_name(start_kube: Callable[..., SimKube]) -> None:
    sim = start_kube("quota-gpu-rollout-k8s126")
    out = kubectl(sim, "get", "quota", "-n", "ml", "-o", "json")
    [quota] = json.loads(out.stdout)["items"]
    assert quota["metadata"]["name"] == "gpu-quota"
    assert quota["status"]["used"]["requests.nvidia.com/gpu"] == "4"
    assert "gpu-quota" in kubectl(sim, "get", "resourcequotas", "-A").stdout
    assert sim.server.writes == []


def _custom(api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, object]:
    meta: dict[str, str] = {"name": name, "creationTimestamp": "2026-05-07T10:00:00Z"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": {}}


def test_get_custom_resources_of_any_scheduler(start_kube: Callable[..., SimKube]) -> None:
    """Objects of kinds the simulator has no built-in type for are served as installed CRDs."""
    base = load_scenario(scenario_file("kueue-quota-exhausted-gpu-k8s129"))
    extra = [
        _custom("scheduling.volcano.sh/v1beta1", "PodGroup", "pg-1", "ai"),
        _custom("scheduling.volcano.sh/v1beta1", "Queue", "research"),
        _custom("resource.k8s.io/v1", "ResourceClaim", "claim-1", "ai"),
        _custom("resource.k8s.io/v1", "ResourceSlice", "gpu-node-1-gpu.nvidia.com-x"),
        _custom("example.com/v1alpha1", "TrainingPolicy", "p1", "ai"),
    ]
    sim = start_kube(dataclasses.replace(base, objects=[*base.objects, *extra]))
    out = kubectl(sim, "get", "workloads,clusterqueues,podgroups,resourceclaims,resourceslices", "-A").stdout
    for name in ("job-train-8c4d2", "cluster-queue", "pg-1", "claim-1", "gpu-node-1-gpu.nvidia.com-x"):
        assert name in out, out
    assert "workload.kueue.x-k8s.io/job-train-8c4d2" in out
    one = json.loads(kubectl(sim, "get", "wl", "job-train-8c4d2", "-n", "ai", "-o", "json").stdout)
    assert one["status"]["conditions"][0]["reason"] == "Pending"
    assert kubectl(sim, "get", "cq", "-o", "name").stdout.split() == ["clusterqueue.kueue.x-k8s.io/cluster-queue"]
    assert "p1" in kubectl(sim, "get", "trainingpolicies", "-n", "ai").stdout  # the lowercase+s rule
    resources = kubectl(sim, "api-resources", "--api-group=kueue.x-k8s.io", "-o", "name").stdout.split()
    assert sorted(resources) == [
        "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io",
    ]
    missing = kubectl(sim, "get", "wl", "nope", "-n", "ai", check=False)
    assert missing.returncode == 1 and 'workloads.kueue.x-k8s.io "nope" not found' in missing.stderr


def test_a_cluster_without_custom_objects_serves_no_such_group(kube: SimKube) -> None:
    out = kubectl(kube, "get", "workloads", "-A", check=False)
    assert out.returncode == 1 and "the server doesn't have a resource type" in out.stderr
