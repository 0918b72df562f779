"""Workload progress in one shape, and the signs that a pod expects a GPU it does not request."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.gpu import gpu_expectations
from bot.kube.workload import pod_template, replica_failure, workload_status


def test_deployment_short_during_a_blocked_rollout() -> None:
    deploy = {
        "kind": "Deployment", "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"replicas": 4, "template": {"metadata": {"labels": {"app": "llm"}}, "spec": {"containers": []}}},
        "status": {"replicas": 4, "readyReplicas": 4, "updatedReplicas": 0, "conditions": [
            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
             "message": "pods \"x\" is forbidden"}]},
    }
    status = workload_status(deploy)
    assert status is not None and not status.satisfied
    assert status.describe() == "deployment llm: 4 desired, 4 created, 4 ready, 0 up to date"
    assert replica_failure(deploy) == 'pods "x" is forbidden'
    template = pod_template(deploy)
    assert template is not None and template["metadata"]["namespace"] == "ml"


def test_healthy_and_finished() -> None:
    sts = {"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"replicas": 2},
           "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}}
    assert workload_status(sts).satisfied  # type: ignore[union-attr]
    job = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"completions": 1, "parallelism": 1},
           "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}
    status = workload_status(job)
    assert status is not None and status.desired == 0 and status.finished and status.satisfied
    waiting = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 2}, "status": {}}
    assert workload_status(waiting).desired == 2  # type: ignore[union-attr]
    assert workload_status({"kind": "Pod"}) is None


def _pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": spec.pop("image", "python:3.11-slim")}
    if "env" in spec:
        container["env"] = spec.pop("env")
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


@pytest.mark.parametrize(("pod", "hint"), [
    (_pod(image="nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04"), "CUDA/GPU build"),
    (_pod(image="pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime"), "CUDA/GPU build"),
    (_pod(image="tensorflow/tensorflow:2.15.0-gpu"), "CUDA/GPU build"),
    (_pod(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), "NVIDIA_VISIBLE_DEVICES=all"),
    (_pod(nodeSelector={"cloud.google.com/gke-accelerator": "nvidia-l4"}), "gke-accelerator"),
    (_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["A100"]}]}]}}}),
     "nvidia.com/gpu.product"),
    (_pod(runtimeClassName="nvidia"), "runtimeClassName nvidia"),
])
def test_gpu_expectations(pod: dict[str, Any], hint: str) -> None:
    assert any(hint in line for line in gpu_expectations(pod)), gpu_expectations(pod)


@pytest.mark.parametrize("pod", [
    _pod(image="nvcr.io/nvidia/pytorch:24.05-py3"),  # an NGC image runs on CPU too: not evident
    _pod(image="vineyardcloudnative/vineyardd:v0.24.2"),
    _pod(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]),
    _pod(nodeSelector={"kubernetes.io/os": "linux"}),
    _pod(image="registry.example/gpubot-node@sha256:0d47c3b1"),
])
def test_no_gpu_expectation(pod: dict[str, Any]) -> None:
    assert gpu_expectations(pod) == []
