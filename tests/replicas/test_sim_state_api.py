"""The simulator serves what several replicas rely on, as a real API server does.

Compare-and-swap (a write at a stale resourceVersion is a 409 Conflict Status, through PUT,
merge patch and the status subresource alike), AlreadyExists on a second create, Leases, and the
gpubot custom resources with discovery and printer columns, so real ``kubectl get
gpuremediations`` works against it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.state.kube import API_VERSION, GROUP, VERSION
from tests.replicas.conftest import NAMESPACE, T0, ManualClock, StateSim


def remediation(name: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "GpuRemediation",
        "metadata": {"name": name},
        "spec": {
            "action": "kubelet.restart",
            "target": "node/gpu-1",
            "requestedBy": "U0REQ",
            "cluster": "prod",
            "ttlSeconds": 900,
            "params": {"node": "gpu-1"},
        },
        "status": {"state": "pending"},
    }


@pytest.fixture
def sim(start_state_sim: Callable[..., StateSim]) -> StateSim:
    return start_state_sim(clock=ManualClock())


def custom(sim: StateSim) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(sim.api_client)


def conflict_of(call: Callable[[], object]) -> dict[str, Any]:
    with pytest.raises(ApiException) as info:
        call()
    assert info.value.status == 409
    body: dict[str, Any] = json.loads(info.value.body)
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == 409
    return body


def test_stale_resource_version_is_a_conflict_on_every_write_path(sim: StateSim) -> None:
    api = custom(sim)
    args = (GROUP, VERSION, NAMESPACE, "gpuremediations")
    created = api.create_namespaced_custom_object(*args, remediation("a-1"))
    stale = created["metadata"]["resourceVersion"]
    fresh = api.replace_namespaced_custom_object_status(*args, "a-1", {**created, "status": {"state": "running"}})
    assert fresh["status"]["state"] == "running" and fresh["metadata"]["resourceVersion"] != stale
    old = {**created, "status": {"state": "expired"}}
    body = conflict_of(lambda: api.replace_namespaced_custom_object_status(*args, "a-1", old))
    assert body["reason"] == "Conflict" and "the object has been modified" in body["message"]
    conflict_of(lambda: api.replace_namespaced_custom_object(*args, "a-1", old))
    patch = {"metadata": {"resourceVersion": stale}, "spec": {"channel": "C1"}}
    conflict_of(lambda: api.patch_namespaced_custom_object(*args, "a-1", patch))
    again = conflict_of(lambda: api.create_namespaced_custom_object(*args, remediation("a-1")))
    assert again["reason"] == "AlreadyExists"
    assert api.get_namespaced_custom_object(*args, "a-1")["status"]["state"] == "running"


def test_leases_are_served_with_compare_and_swap(sim: StateSim) -> None:
    leases = client.CoordinationV1Api(sim.api_client)
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name="gpubot-leader"),
        spec=client.V1LeaseSpec(holder_identity="pod-a", lease_duration_seconds=15),
    )
    created = leases.create_namespaced_lease(NAMESPACE, body)
    assert created.spec.holder_identity == "pod-a"
    with pytest.raises(ApiException) as exists:
        leases.create_namespaced_lease(NAMESPACE, body)
    assert exists.value.status == 409
    created.spec.holder_identity = "pod-b"
    taken = leases.replace_namespaced_lease("gpubot-leader", NAMESPACE, created)
    created.spec.holder_identity = "pod-c"  # still at the version pod-b replaced
    with pytest.raises(ApiException) as lost:
        leases.replace_namespaced_lease("gpubot-leader", NAMESPACE, created)
    assert lost.value.status == 409
    assert [lease.metadata.name for lease in leases.list_namespaced_lease(NAMESPACE).items] == ["gpubot-leader"]
    assert taken.spec.holder_identity == "pod-b"
    leases.delete_namespaced_lease("gpubot-leader", NAMESPACE)


def test_audit_records_can_be_created_but_never_changed(sim: StateSim) -> None:
    api = custom(sim)
    args = (GROUP, VERSION, NAMESPACE, "gpuauditrecords")
    record = {"apiVersion": API_VERSION, "kind": "GpuAuditRecord", "metadata": {"generateName": "audit-"}}
    created = api.create_namespaced_custom_object(*args, {**record, "spec": {"event": "offer"}})
    name = created["metadata"]["name"]
    assert name.startswith("audit-") and len(name) == len("audit-") + 5
    for call in (
        lambda: api.replace_namespaced_custom_object(*args, name, {**created, "spec": {"event": "deny"}}),
        lambda: api.patch_namespaced_custom_object(*args, name, {"spec": {"event": "deny"}}),
        lambda: api.delete_namespaced_custom_object(*args, name),
    ):
        with pytest.raises(ApiException) as info:
            call()
        assert info.value.status == 405
    assert api.get_namespaced_custom_object(*args, name)["spec"] == {"event": "offer"}


def test_the_server_clock_sets_creation_times_and_the_date_header(start_state_sim: Callable[..., StateSim]) -> None:
    clock = ManualClock(T0 + timedelta(hours=3))  # a server three hours ahead of this host
    sim = start_state_sim(clock=clock)
    api = custom(sim)
    data, _status, headers = api.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, NAMESPACE, "gpuremediations", remediation("a-2")
    )
    assert data["metadata"]["creationTimestamp"] == "2026-11-30T13:00:00Z"
    assert headers["Date"] == "Mon, 30 Nov 2026 13:00:00 GMT"


def kubectl(sim: StateSim, *args: str) -> str:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(sim.kubeconfig), *args], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_kubectl_get_gpuremediations_prints_their_columns(start_state_sim: Callable[..., StateSim]) -> None:
    clock = ManualClock()
    sim = start_state_sim(clock=clock)
    api = custom(sim)
    api.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "gpuremediations", remediation("a-3"))
    clock.now = T0 + timedelta(minutes=5)
    lines = kubectl(sim, "get", "gpuremediations", "-n", NAMESPACE).splitlines()
    assert lines[0].split() == ["NAME", "ACTION", "TARGET", "STATE", "REQUESTED", "BY", "AGE"]
    assert lines[1].split() == ["a-3", "kubelet.restart", "node/gpu-1", "pending", "U0REQ", "5m"]
    short = kubectl(sim, "get", "gpurem", "-n", NAMESPACE, "-o", "jsonpath={.items[*].status.state}")
    assert short == "pending"
    resources = kubectl(sim, "api-resources", "--api-group", GROUP).split()
    assert {"gpuremediations", "gpuauditrecords", "gpukeys"} <= set(resources)
