"""Real kubectl 1.32 works against the simulator through the generated kubeconfig."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

from tests.sim.conftest import SimKube

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
