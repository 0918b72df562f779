"""Which pods the kubelet rejected at admission, and what their messages say (plain dicts)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.admission import classify_message, rejection, rejections, strip_prefix


def failed_pod(name: str, reason: str | None, message: str = "", *, node: str = "gpu-1",
               created: str = "2025-02-13T08:00:00Z", **status: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"phase": "Failed", **status}
    if reason is not None:
        body["reason"] = reason
    if message:
        body["message"] = message
    return {
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": created},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "cuda"}]},
        "status": body,
    }


@pytest.mark.parametrize(
    ("reason", "message", "expected"),
    [
        # kubernetes/kubernetes#130145 (kubelet before 1.26: "Pod " prefix)
        ("UnexpectedAdmissionError",
         "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
         "Requested: 1, Available: 0, which is unexpected",
         ("unavailable", "nvidia.com/gpu", 1, 0)),
        # the same from a 1.26+ kubelet
        ("UnexpectedAdmissionError",
         "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
         "nvidia.com/mig-1g.10gb. Requested: 2, Available: 1, which is unexpected",
         ("unavailable", "nvidia.com/mig-1g.10gb", 2, 1)),
        # NVIDIA/k8s-device-plugin#231
        ("UnexpectedAdmissionError",
         "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: "
         "code = Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 3: "
         "nvml: GPU is lost, which is unexpected",
         ("lost", "", None, None)),
        # NVIDIA/k8s-device-plugin#260
        ("UnexpectedAdmissionError",
         "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
         "Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 5: nvml: "
         "Insufficient Permissions, which is unexpected",
         ("plugin", "", None, None)),
        ("UnexpectedAdmissionError",
         "Pod was rejected: Allocate failed due to no healthy devices present; cannot allocate unhealthy "
         "devices amd.com/gpu, which is unexpected",
         ("unhealthy", "amd.com/gpu", None, None)),
        ("UnexpectedAdmissionError",
         "Pod was rejected: Allocate failed due to cannot allocate unregistered device nvidia.com/gpu, "
         "which is unexpected",
         ("unregistered", "nvidia.com/gpu", None, None)),
        ("TopologyAffinityError", "Pod was rejected: Resources cannot be allocated with Topology locality",
         ("topology", "", None, None)),
        ("OutOfnvidia.com/gpu",
         "Pod Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 8, capacity: 8",
         ("out_of", "nvidia.com/gpu", None, None)),
        ("NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed", ("other", "", None, None)),
    ],
)
def test_messages_as_kubelets_print_them(reason: str, message: str, expected: tuple[Any, ...]) -> None:
    assert classify_message(reason, message) == expected
    found = rejection(failed_pod("p", reason, message))
    assert found is not None and found.cause == expected[0] and found.reason == reason
    assert not found.message.startswith(("Pod was rejected", "Pod Allocate"))


def test_prefixes() -> None:
    assert strip_prefix("Pod was rejected: Predicate NodeAffinity failed") == "Predicate NodeAffinity failed"
    assert strip_prefix("Pod Allocate failed due to x") == "Allocate failed due to x"
    assert strip_prefix("Allocate failed due to x") == "Allocate failed due to x"


def test_pods_that_were_not_rejected() -> None:
    running = failed_pod("a", "UnexpectedAdmissionError", "x")
    running["status"]["phase"] = "Running"
    unscheduled = failed_pod("b", "UnexpectedAdmissionError", "x")
    del unscheduled["spec"]["nodeName"]
    crashed = failed_pod("c", None, containerStatuses=[
        {"name": "main", "state": {"terminated": {"exitCode": 1, "reason": "Error",
                                                  "startedAt": "2025-02-13T08:00:01Z"}}}])
    evicted = failed_pod("d", "Evicted", "The node was low on resource: memory.")
    ran_then_failed = failed_pod("e", "Weird", "x", containerStatuses=[
        {"name": "main", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])
    assert [rejection(p) for p in (running, unscheduled, crashed, evicted, ran_then_failed)] == [None] * 5
    assert rejection({"status": "garbage"}) is None  # type: ignore[arg-type]
    assert rejection("not a pod") is None  # type: ignore[arg-type]


def test_an_unknown_reason_on_a_pod_that_never_ran_is_kept_verbatim() -> None:
    pod = failed_pod("x", "SomethingNew", "Pod was rejected: the frobnicator said no",
                     containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}])
    found = rejection(pod)
    assert found is not None and (found.cause, found.message) == ("other", "the frobnicator said no")
    assert rejection(failed_pod("y", "SomethingNew")).message == "(no message)"  # type: ignore[union-attr]


def test_rejections_newest_first() -> None:
    pods = [
        failed_pod("old", "UnexpectedAdmissionError", "Pod x", created="2025-02-13T08:00:00Z"),
        failed_pod("new", "UnexpectedAdmissionError", "Pod x", created="2025-02-13T09:00:00Z"),
        {"metadata": {"name": "fine"}, "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}},
    ]
    assert [r.ref for r in rejections(pods)] == ["ml/new", "ml/old"]
