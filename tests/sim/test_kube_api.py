"""The simulated Kubernetes API serves objects, errors, writes, watches and faults like the real one."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import Callable

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from bot.probes.kube import KubeReader
from bot.sim.faults import FaultSet
from bot.sim.patch import json_patch, merge_patch, strategic_merge_patch
from bot.sim.scenario import ApiFault, load_scenario
from bot.sim.store import ObjectStore
from tests.sim.conftest import SCENARIOS, SimKube

ALL_SCENARIOS = sorted(SCENARIOS.glob("*.yaml"))
DEMO = ("ai", "gpu-demo-6c9f7d-tx2lq")


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.01)


# -- lists and paging ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=lambda p: p.stem)
def test_paging_with_limit_2_visits_every_pod_once(start_kube: Callable[..., SimKube], path) -> None:
    sim = start_kube(load_scenario(path))
    expected = sorted(
        (o["metadata"].get("namespace", "default"), o["metadata"]["name"])
        for o in sim.server.scenario.objects
        if o["kind"] == "Pod"
    )
    seen: list[tuple[str, str]] = []
    token = None
    for _ in range(len(expected) + 2):
        page = sim.core.list_pod_for_all_namespaces(limit=2, _continue=token)
        assert len(page.items) <= 2
        seen += [(p.metadata.namespace, p.metadata.name) for p in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == len(expected) - len(seen)
    assert seen == expected
    assert all(
        p.metadata.uid and p.metadata.resource_version for p in sim.core.list_pod_for_all_namespaces().items
    )


def test_list_shape_and_global_resource_version(kube: SimKube) -> None:
    status, body = kube.raw_json("/api/v1/namespaces/qgpu/pods")
    assert status == 200
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert int(body["metadata"]["resourceVersion"]) == kube.server.store.resource_version
    assert {p["metadata"]["name"] for p in body["items"]} == {"qgpu-manager-7xk2p", "qgpu-manager-m9q4d"}
    status, body = kube.raw_json("/apis/apps/v1/daemonsets")
    assert body["kind"] == "DaemonSetList" and body["apiVersion"] == "apps/v1"
    assert body["items"][0]["metadata"]["generation"] == 1
    status, body = kube.raw_json("/apis/batch/v1/jobs")
    assert (status, body["kind"], body["items"]) == (200, "JobList", [])


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("app=qgpu-manager", {"qgpu-manager-7xk2p", "qgpu-manager-m9q4d"}),
        ("app==gpu-demo", {"gpu-demo-6c9f7d-tx2lq"}),
        ("app!=qgpu-manager", {"gpu-demo-6c9f7d-tx2lq"}),
        ("app in (gpu-demo, other)", {"gpu-demo-6c9f7d-tx2lq"}),
        ("app notin (gpu-demo)", {"qgpu-manager-7xk2p", "qgpu-manager-m9q4d"}),
        ("pod-template-hash", {"gpu-demo-6c9f7d-tx2lq"}),
        ("!pod-template-hash", {"qgpu-manager-7xk2p", "qgpu-manager-m9q4d"}),
        ("app=gpu-demo,!pod-template-hash", set()),
    ],
)
def test_label_selectors(kube: SimKube, selector: str, names: set[str]) -> None:
    pods = kube.core.list_pod_for_all_namespaces(label_selector=selector).items
    assert {p.metadata.name for p in pods} == names


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("spec.nodeName=tcs-10-29-25-6", {"qgpu-manager-m9q4d"}),
        ("spec.nodeName==tcs-10-29-25-5,metadata.namespace=ai", {"gpu-demo-6c9f7d-tx2lq"}),
        ("spec.nodeName=tcs-10-29-25-5,status.phase!=Running", set()),
        ("metadata.name=qgpu-manager-7xk2p", {"qgpu-manager-7xk2p"}),
        ("metadata.namespace!=qgpu", {"gpu-demo-6c9f7d-tx2lq"}),
        ("metadata.uid=9e8d7c6b-0000-4000-8000-0000000000f1", {"gpu-demo-6c9f7d-tx2lq"}),
    ],
)
def test_field_selectors(kube: SimKube, selector: str, names: set[str]) -> None:
    pods = kube.core.list_pod_for_all_namespaces(field_selector=selector).items
    assert {p.metadata.name for p in pods} == names


def test_event_field_selectors(start_kube: Callable[..., SimKube]) -> None:
    sim = start_kube("zombie-checkpoint")
    sel = "involvedObject.name=gpu-full-5d8c6-q7wz2,involvedObject.kind=Pod,type=Warning"
    events = sim.core.list_namespaced_event("ai", field_selector=sel).items
    assert [e.reason for e in events] == ["FailedScheduling"]
    assert sim.core.list_event_for_all_namespaces(field_selector="involvedObject.name=nope").items == []


def test_unknown_field_label_is_bad_request(kube: SimKube) -> None:
    with pytest.raises(ApiException) as err:
        kube.core.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    body = json.loads(err.value.body)
    assert (err.value.status, body["kind"], body["reason"]) == (400, "Status", "BadRequest")


# -- errors -------------------------------------------------------------------------------------
def test_not_found_is_a_status_object(kube: SimKube) -> None:
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod("missing", "ai")
    body = json.loads(err.value.body)
    assert err.value.status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "pods"},
        "code": 404,
    }
    for path in ("/api/v1/widgets", "/apis/example.com/v1/things", "/api/v1/namespaces/ai/pods/a/b/c/d"):
        status, body = kube.raw_json(path)
        assert (status, body["kind"], body["reason"], body["code"]) == (404, "Status", "NotFound", 404)


def test_discovery_and_version(kube: SimKube) -> None:
    assert kube.raw_json("/version")[1]["gitVersion"] == "v1.20.6-tke.34"
    info = client.VersionApi(kube.api_client).get_code()
    assert (info.major, info.minor) == ("1", "20")
    resources = {r["name"]: r for r in kube.raw_json("/api/v1")[1]["resources"]}
    assert resources["pods"]["shortNames"] == ["po"] and "pods/exec" in resources
    assert resources["nodes"]["namespaced"] is False and "patch" in resources["nodes"]["verbs"]
    groups = {g["name"] for g in kube.raw_json("/apis")[1]["groups"]}
    assert groups == {"apps", "batch", "coordination.k8s.io", "gpubot.dev", "node.k8s.io"}
    assert kube.raw("/openapi/v2")[0] == 404


def test_resourcequotas_through_the_official_client_and_the_reader(start_kube: Callable[..., SimKube]) -> None:
    sim = start_kube(load_scenario(SCENARIOS / "quota-gpu-rollout-k8s126.yaml"))
    resources = {r["name"]: r for r in sim.raw_json("/api/v1")[1]["resources"]}
    assert resources["resourcequotas"]["namespaced"] and resources["resourcequotas"]["shortNames"] == ["quota"]
    quotas = sim.core.list_namespaced_resource_quota("ml").items
    assert [q.metadata.name for q in quotas] == ["gpu-quota"]
    assert quotas[0].status.hard["requests.nvidia.com/gpu"] == "4"
    assert sim.core.list_namespaced_resource_quota("kube-system").items == []
    reader = KubeReader(sim.api_client, page_size=1)
    [quota] = asyncio.run(reader.list_resourcequotas("ml"))
    assert quota["kind"] == "ResourceQuota" and quota["status"]["used"]["requests.nvidia.com/gpu"] == "4"
    assert sim.server.writes == []


# -- writes -------------------------------------------------------------------------------------
def test_cordon_patch_changes_state_and_is_recorded(kube: SimKube) -> None:
    before = kube.server.store.resource_version
    node = kube.core.patch_node("tcs-10-29-25-5", {"spec": {"unschedulable": True}})
    assert node.spec.unschedulable is True
    assert int(node.metadata.resource_version) > before
    assert kube.server.store.find("Node", "tcs-10-29-25-5")["spec"]["unschedulable"] is True
    [write] = kube.server.writes
    assert (write.verb, write.path, write.status) == ("PATCH", "/api/v1/nodes/tcs-10-29-25-5", 200)
    assert write.body == {"spec": {"unschedulable": True}}
    assert write.content_type == "application/strategic-merge-patch+json"


def test_reads_record_no_writes(kube: SimKube) -> None:
    kube.core.list_pod_for_all_namespaces()
    kube.core.read_node("tcs-10-29-25-5")
    kube.apps.list_daemon_set_for_all_namespaces()
    assert kube.server.writes == []
    assert kube.server.stats.requests == 3 and kube.server.stats.bytes_sent > 1000
    kube.server.stats.reset()
    assert (kube.server.stats.requests, kube.server.stats.bytes_sent) == (0, 0)


def test_merge_and_json_patches_and_generation(kube: SimKube) -> None:
    ns = kube.raw_json(
        "/api/v1/namespaces/ai",
        method="PATCH",
        body={"metadata": {"labels": {"team": "ml", "tce.cloud.tencent.com/project": None}}},
        content_type="application/merge-patch+json",
    )[1]
    assert ns["metadata"]["labels"]["team"] == "ml"
    assert "tce.cloud.tencent.com/project" not in ns["metadata"]["labels"]
    ops = [{"op": "add", "path": "/spec/template/metadata/annotations", "value": {"x": "1"}}]
    ds = kube.raw_json(
        "/apis/apps/v1/namespaces/qgpu/daemonsets/qgpu-manager",
        method="PATCH",
        body=ops,
        content_type="application/json-patch+json",
    )[1]
    assert ds["spec"]["template"]["metadata"]["annotations"] == {"x": "1"}
    assert ds["metadata"]["generation"] == 2
    failed = [{"op": "test", "path": "/metadata/name", "value": "other"}]
    status, body = kube.raw_json(
        "/api/v1/nodes/tcs-10-29-25-6",
        method="PATCH",
        body=failed,
        content_type="application/json-patch+json",
    )
    assert (status, body["reason"]) == (409, "Conflict")


def test_replace_with_stale_resource_version_conflicts(kube: SimKube) -> None:
    node = kube.core.read_node("tcs-10-29-25-6")
    node.metadata.labels["a"] = "b"
    kube.core.replace_node("tcs-10-29-25-6", node)
    node.metadata.labels["a"] = "c"
    with pytest.raises(ApiException) as err:
        kube.core.replace_node("tcs-10-29-25-6", node)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "Conflict"
    assert kube.server.store.find("Node", "tcs-10-29-25-6")["metadata"]["labels"]["a"] == "b"


def test_delete_pod_without_finalizers_removes_it(kube: SimKube) -> None:
    body = client.V1DeleteOptions(grace_period_seconds=0, propagation_policy="Background")
    kube.core.delete_namespaced_pod("qgpu-manager-m9q4d", "qgpu", body=body)
    assert kube.server.store.find("Pod", "qgpu-manager-m9q4d", "qgpu") is None
    [write] = kube.server.writes
    assert (write.verb, write.grace_period_seconds, write.body["propagationPolicy"]) == (
        "DELETE",
        0,
        "Background",
    )
    with pytest.raises(ApiException) as err:
        kube.core.delete_namespaced_pod("qgpu-manager-m9q4d", "qgpu")
    assert err.value.status == 404


def test_delete_pod_with_finalizers_sets_deletion_timestamp(kube: SimKube) -> None:
    kube.core.patch_namespaced_pod(*DEMO[::-1], {"metadata": {"finalizers": ["example.com/hold"]}})
    kube.core.delete_namespaced_pod(*DEMO[::-1], grace_period_seconds=15)
    pod = kube.core.read_namespaced_pod(*DEMO[::-1])
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 15
    assert kube.server.writes[-1].grace_period_seconds == 15


def test_create_namespace_then_already_exists(kube: SimKube) -> None:
    ns = client.V1Namespace(metadata=client.V1ObjectMeta(name="fresh"))
    created = kube.core.create_namespace(ns)
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as err:
        kube.core.create_namespace(ns)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "AlreadyExists"


def test_patch_helpers() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    target = {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    patched = strategic_merge_patch(target, {"containers": [{"name": "b", "image": "z"}]})
    assert patched["containers"] == [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]
    assert target["containers"][1]["image"] == "y"
    assert json_patch(
        {"l": [1, 2]}, [{"op": "add", "path": "/l/-", "value": 3}, {"op": "remove", "path": "/l/0"}]
    ) == {"l": [2, 3]}


# -- watch --------------------------------------------------------------------------------------
def test_watch_replays_history_and_streams_live_changes(kube: SimKube) -> None:
    rv = kube.core.list_namespaced_pod("ai").metadata.resource_version
    kube.core.patch_namespaced_pod(*DEMO[::-1], {"metadata": {"labels": {"step": "1"}}})
    kube.core.patch_namespaced_pod("qgpu-manager-7xk2p", "qgpu", {"metadata": {"labels": {"other": "ns"}}})

    def live_write() -> None:
        wait_until(lambda: kube.server.active_watches > 0)
        kube.core.patch_namespaced_pod(*DEMO[::-1], {"metadata": {"labels": {"step": "2"}}})

    seen = []
    w = watch.Watch()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(live_write)
        for event in w.stream(kube.core.list_namespaced_pod, "ai", resource_version=rv, timeout_seconds=10):
            seen.append((event["type"], event["object"].metadata.labels.get("step")))
            if len(seen) == 2:
                w.stop()
        future.result()
    assert seen == [("MODIFIED", "1"), ("MODIFIED", "2")]


def test_watch_honours_selectors_and_timeout(kube: SimKube) -> None:
    rv = kube.core.list_pod_for_all_namespaces().metadata.resource_version
    kube.core.delete_namespaced_pod("qgpu-manager-m9q4d", "qgpu")
    kube.core.patch_namespaced_pod(*DEMO[::-1], {"metadata": {"labels": {"x": "y"}}})
    events = list(
        watch.Watch().stream(
            kube.core.list_pod_for_all_namespaces,
            label_selector="app=qgpu-manager",
            resource_version=rv,
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("DELETED", "qgpu-manager-m9q4d")]


def test_watch_after_compaction_is_410_expired(kube: SimKube) -> None:
    rv = kube.core.list_pod_for_all_namespaces().metadata.resource_version
    kube.core.patch_node("tcs-10-29-25-5", {"spec": {"unschedulable": True}})
    kube.server.store.compact()
    status, _headers, data = kube.raw(f"/api/v1/pods?watch=1&resourceVersion={rv}")
    event = json.loads(data.splitlines()[0])
    assert status == 200 and event["type"] == "ERROR"
    assert (event["object"]["kind"], event["object"]["code"], event["object"]["reason"]) == (
        "Status",
        410,
        "Expired",
    )
    with pytest.raises(ApiException) as err:
        list(
            watch.Watch().stream(
                kube.core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5
            )
        )
    assert err.value.status == 410


def test_history_is_bounded() -> None:
    store = ObjectStore(load_scenario(SCENARIOS / "nvml-unknown-error.yaml").objects, history_limit=3)
    rv = store.resource_version
    node_type = next(rt for rt in store.collections if rt.kind == "Node")
    for i in range(5):
        store.put(node_type, {**store.find("Node", "tcs-10-29-25-5"), "spec": {"i": i}})
    assert store.changes_since(rv) is None
    assert [c.rv for c in store.changes_since(rv + 2) or []] == [rv + 3, rv + 4, rv + 5]


# -- faults -------------------------------------------------------------------------------------
def test_fault_500_then_recovers(kube: SimKube) -> None:
    kube.server.faults.add(ApiFault(match="/api/v1/nodes", status=500, times=1))
    with pytest.raises(ApiException) as err:
        kube.core.list_node()
    assert err.value.status == 500 and json.loads(err.value.body)["reason"] == "InternalError"
    assert len(kube.core.list_node().items) == 2


def test_fault_429_has_retry_after(kube: SimKube) -> None:
    kube.server.faults.add(ApiFault(match="/pods", status=429, verb="GET"))
    status, headers, data = kube.raw("/api/v1/pods")
    assert (status, headers["Retry-After"], json.loads(data)["reason"]) == (429, "1", "TooManyRequests")
    assert kube.raw("/api/v1/nodes")[0] == 200


def test_fault_delay_and_scenario_faults(start_kube: Callable[..., SimKube]) -> None:
    sc = load_scenario(SCENARIOS / "nvml-unknown-error.yaml")
    sc.api_faults = [ApiFault(match="/api/v1/namespaces", delay_s=0.3, times=1)]
    sim = start_kube(sc)
    started = time.monotonic()
    sim.core.list_namespace()
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    sim.core.list_namespace()
    assert time.monotonic() - started < 0.3


def test_fault_rate_is_seeded() -> None:
    def pattern() -> list[bool]:
        faults = FaultSet([ApiFault(match="/", status=500, rate=0.5)], seed=7)
        return [faults.match("GET", "/api/v1/pods") is not None for _ in range(40)]

    first = pattern()
    assert first == pattern() and 5 < sum(first) < 35
