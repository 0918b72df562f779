"""The watch-fed cache against the simulated API server: sync, order, deletes, 410 relist, staleness.

Every test talks real HTTP list+watch to a ``KubeApiServer`` on its own loop thread, and writes
through the server's store (the way the API server itself changes state), then polls the cache
with a deadline until it has seen the change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from bot.kube.gpu import gpu_node_names, is_gpu_node
from bot.kube.node_map import NodeMap
from bot.kube.selectors import SelectorError
from bot.probes.cache import MIN_RELIST_PAGE, RELIST_PAGE_BYTES, WatchCache, page_limit
from bot.probes.clients import GPU_KEPT
from bot.probes.kube import KubeReader
from bot.probes.views import KEEP_NOTHING
from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import scenario_from_dict
from bot.sim.store import RESOURCE_TYPES
from bot.sim.threaded import LoopThread
from bot.synth.generate import generate_scenario

POD = next(rt for rt in RESOURCE_TYPES if rt.kind == "Pod")


class Harness:
    def __init__(self, server: KubeApiServer, kubeconfig: Path) -> None:
        self.server = server
        self.kubeconfig = kubeconfig
        self.reader = KubeReader(self.new_client(), page_size=7)
        self.caches: list[WatchCache] = []

    def new_client(self) -> client.ApiClient:
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def cache(self, **kwargs: Any) -> WatchCache:
        kwargs.setdefault("page_size", 7)  # several pages even on a small cluster
        kwargs.setdefault("kept", GPU_KEPT)  # what the bot's cache keeps (bot.probes.clients)
        c = WatchCache(self.new_client(), self.reader, **kwargs)
        self.caches.append(c)
        return c

    def put_pod(self, namespace: str, name: str, **changes: Any) -> None:
        obj = self.server.store.find("Pod", name, namespace)
        assert obj is not None
        spec = {**obj["spec"], **changes.get("spec", {})}
        status = {**obj["status"], **changes.get("status", {})}
        self.server.store.put(POD, {**obj, "spec": spec, "status": status})


@pytest.fixture(scope="module")
def loop_thread() -> Iterator[LoopThread]:
    lt = LoopThread("cache-test-sim")
    yield lt
    lt.close()


@pytest.fixture
async def sim(loop_thread: LoopThread, tmp_path: Path) -> AsyncIterator[Harness]:
    scenario = scenario_from_dict(generate_scenario(nodes=6, gpu_nodes=2, pods=40, seed=3))
    server = KubeApiServer(scenario)
    loop_thread.call(server.start())
    h = Harness(server, write_kubeconfig(tmp_path / "kubeconfig", server.url))
    yield h
    for c in h.caches:
        await asyncio.to_thread(c.close)
    h.reader.close()
    loop_thread.call(server.stop())


async def until(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_not_ready_before_sync_reads_go_to_the_api(sim: Harness) -> None:
    cache = sim.cache()
    assert not cache.ready
    before = sim.reader.stats.requests
    pods = await cache.slim_pods()
    assert sim.reader.stats.requests > before  # answered by the API reader
    cache.start()
    assert await cache.wait_ready(10)
    before = sim.reader.stats.requests
    cached = await cache.slim_pods()
    assert sim.reader.stats.requests == before  # now from the cache
    assert cached == pods  # the same records, in the same order
    assert cache.stats.by_call["list Pod"] >= 6  # paginated: 41 pods in pages of 7
    whole = await cache.list_pods()  # whole pods are not kept: the API answers
    assert sim.reader.stats.requests > before
    assert "containers" in whole[0]["spec"] and whole[0]["spec"]["containers"][0].get("image")


async def test_pods_a_watch_adds_are_served_in_the_apis_order(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    first = next(p for p in sim.server.store.objects(POD) if p["spec"].get("nodeName"))
    node = first["spec"]["nodeName"]
    events = cache.reflectors["Pod"].events
    for name in ("zz-new", "aa-new"):
        sim.server.store.put(POD, {**first, "metadata": {**first["metadata"], "name": name, "uid": name}})
    await until(lambda: cache.reflectors["Pod"].events >= events + 2, "two pod events")
    assert await cache.slim_pods() == await sim.reader.slim_pods()
    on_node = (await cache.slim_pods_by_node([node]))[node]
    assert on_node == (await sim.reader.slim_pods_by_node([node]))[node]
    assert [p.ref for p in on_node] == sorted(p.ref for p in on_node)


async def test_events_are_applied_in_order(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    target = ("bench", "target-pending-0")
    events_before = cache.reflectors["Pod"].events
    for node, phase in [("gpu-00001", "Pending"), ("cpu-00002", "Running"), ("cpu-00003", "Failed")]:
        sim.put_pod(*target, spec={"nodeName": node}, status={"phase": phase})
    await until(lambda: cache.reflectors["Pod"].events >= events_before + 3, "three pod events")
    record = cache.stores["Pod"].objects[target]
    assert (record.node, record.phase) == ("cpu-00003", "Failed")
    on = cache.slim_pods_on(["gpu-00001", "cpu-00002", "cpu-00003"])
    assert [p.name for p in on["cpu-00003"] if p.namespace == "bench"] == ["target-pending-0"]
    assert not [p for p in on["gpu-00001"] + on["cpu-00002"] if p.name == "target-pending-0"]


async def test_a_deleted_pod_leaves_the_cache(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    victim = next(p for p in sim.server.store.objects(POD) if p["spec"].get("nodeName"))
    ns, name, node = victim["metadata"]["namespace"], victim["metadata"]["name"], victim["spec"]["nodeName"]
    assert (ns, name) in cache.stores["Pod"].objects
    sim.server.store.remove(POD, ns, name)
    await until(lambda: (ns, name) not in cache.stores["Pod"].objects, "the delete event")
    assert name not in [p.name for p in cache.slim_pods_on([node])[node]]
    assert name not in [p.name for p in await cache.slim_pods() if p.namespace == ns]


async def test_relists_after_410_gone(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    pods = cache.reflectors["Pod"]
    assert pods.relists == 1
    await asyncio.to_thread(cache.stop)  # keeps its resourceVersion, as a dropped connection would
    gone = next(p for p in sim.server.store.objects(POD) if p["metadata"]["namespace"] != "bench")
    ns, name = gone["metadata"]["namespace"], gone["metadata"]["name"]
    sim.server.store.remove(POD, ns, name)
    sim.put_pod("bench", "target-pending-0", status={"phase": "Running"}, spec={"nodeName": "gpu-00001"})
    sim.server.store.compact()  # the cache's version is now older than the kept history
    cache.start()  # re-watch from the old version: 410 Expired, then relist
    await until(lambda: pods.relists == 2, "a relist")
    assert (ns, name) not in pods.store.objects
    assert pods.store.objects[("bench", "target-pending-0")].phase == "Running"
    assert cache.ready and cache.fresh("Pod")


async def test_stale_cache_falls_back_to_the_api(sim: Harness) -> None:
    cache = sim.cache(staleness_s=0.3, watch_timeout_s=30)
    cache.start()
    assert await cache.wait_ready(10)
    await until(lambda: not cache.fresh("Pod"), "the staleness bound to pass")
    before = sim.reader.stats.requests
    await cache.slim_pods()
    assert sim.reader.stats.requests > before  # the API reader walked the pods
    sim.put_pod("bench", "target-pending-0", status={"phase": "Pending"})
    await until(lambda: cache.fresh("Pod"), "an event to make it fresh again")
    before = sim.reader.stats.requests
    await cache.slim_pods()
    assert sim.reader.stats.requests == before


async def test_node_map_is_built_once_per_change_of_the_nodes(sim: Harness) -> None:
    cache = sim.cache()
    before = sim.reader.stats.requests
    unsynced = await cache.node_map()  # not synced: listed through the API, no marks kept
    assert not isinstance(unsynced, NodeMap) and sim.reader.stats.requests > before
    cache.start()
    assert await cache.wait_ready(10)
    first = await cache.node_map()
    assert isinstance(first, NodeMap) and sorted(first) == sorted(unsynced)
    assert first.marked == {n for n, obj in first.items() if is_gpu_node(obj)}
    assert first.marked and first.marked < set(first)  # GPU and CPU nodes told apart
    assert await cache.node_map() is first  # no change: the same map, nothing classified again
    node_type = next(rt for rt in RESOURCE_TYPES if rt.kind == "Node")
    cpu = next(n for n in first if n not in first.marked)
    obj = sim.server.store.find("Node", cpu, "")
    assert obj is not None
    labels = {**obj["metadata"].get("labels", {}), "nvidia.com/gpu.present": "true"}
    events = cache.reflectors["Node"].events
    sim.server.store.put(node_type, {**obj, "metadata": {**obj["metadata"], "labels": labels}})
    await until(lambda: cache.reflectors["Node"].events > events, "the node event")
    second = await cache.node_map()
    assert isinstance(second, NodeMap) and second is not first
    assert second.marked == first.marked | {cpu}


def test_relist_pages_shrink_to_the_objects_size() -> None:
    assert page_limit(500, 500 * 200, 500) == 500  # small objects: the configured page
    assert page_limit(500, 100 * 6_600, 100) == RELIST_PAGE_BYTES // 6_600  # realistic pods: ~1 MB
    assert page_limit(500, 50 * 200_000, 50) == MIN_RELIST_PAGE  # huge objects: not one per request
    assert page_limit(7, 7 * 100_000, 7) == 7  # never above the configured page
    assert page_limit(500, 0, 0) == 500  # an empty page says nothing about sizes


async def test_kept_nodes_share_their_strings_and_drop_what_no_check_reads(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    kept = list((await cache.node_map()).values())
    assert len(kept) >= 2
    for node in kept:
        assert node["kind"] == "Node" and "managedFields" not in node["metadata"]
        assert not {"images", "volumesInUse", "volumesAttached", "daemonEndpoints"} & set(node["status"])
    first, second = (n["status"]["conditions"][-1] for n in kept[:2])
    assert first["reason"] == second["reason"] and first["reason"] is second["reason"]  # one string, shared
    served = {n["metadata"]["name"]: n for n in await sim.reader.list_nodes()}
    for node in kept:  # everything else as served
        whole = served[node["metadata"]["name"]]
        assert node["status"]["capacity"] == whole["status"]["capacity"]
        assert node["metadata"].get("labels") == whole["metadata"].get("labels")


def _by_name(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in pods}


async def test_a_gpu_daemonsets_pods_are_kept_whole_and_follow_their_events(sim: Harness) -> None:
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    ds = next(d for d in await cache.list_daemonsets() if d["metadata"]["name"] == "qgpu-manager")
    before = sim.reader.stats.requests
    kept = await cache.component_pods(ds)
    assert sim.reader.stats.requests == before  # no API request
    listed = await sim.reader.list_pods("qgpu", label_selector="app=qgpu-manager")
    assert listed and sorted(_by_name(kept)) == sorted(_by_name(listed))
    for name, pod in _by_name(listed).items():
        mine = _by_name(kept)[name]
        assert mine["status"] == pod["status"] and mine["spec"] == pod["spec"]
        assert "managedFields" not in mine["metadata"]
    # a container restart reaches the kept copy
    name = kept[0]["metadata"]["name"]
    restarted = [{"name": "qgpu-manager", "ready": False, "restartCount": 7, "state": {"waiting": {"reason": "X"}}}]
    sim.put_pod("qgpu", name, status={"containerStatuses": restarted})

    async def restarts() -> int:
        pods = await cache.component_pods(ds)
        statuses = _by_name(pods)[name]["status"].get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount", 0))

    deadline = time.monotonic() + 10
    while await restarts() != 7:
        assert time.monotonic() < deadline, "the pod event did not reach the kept copy"
        await asyncio.sleep(0.01)
    # and a deleted pod leaves it
    sim.server.store.remove(POD, "qgpu", name)
    await until(lambda: ("qgpu", name) not in cache.stores["Pod"].full, "the delete event")
    assert name not in _by_name(await cache.component_pods(ds))


async def test_a_daemonset_whose_pods_were_not_all_kept_is_read_from_the_api(sim: Harness) -> None:
    """A DaemonSet recognised only by its own labels, with pods that carry none of them: the
    cache cannot know them for component pods, so it lists them from the API instead of
    answering an empty list."""
    ds_type = next(rt for rt in RESOURCE_TYPES if rt.kind == "DaemonSet")
    helper = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-helper", "namespace": "kube-system", "uid": "ds-helper",
                     "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"}},
        "spec": {"selector": {"matchLabels": {"app": "helper"}}},
    }
    sim.server.store.put(ds_type, helper)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "node-helper-x1", "namespace": "kube-system", "uid": "p-helper",
                     "labels": {"app": "helper"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "node-helper",
                                          "uid": "ds-helper", "controller": True}]},
        "spec": {"nodeName": "gpu-00000", "containers": [{"name": "c", "image": "helper:1"}]},
        "status": {"phase": "Running"},
    }
    sim.server.store.put(POD, pod)
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    ds = next(d for d in await cache.list_daemonsets() if d["metadata"]["name"] == "node-helper")
    before = sim.reader.stats.requests
    assert sorted(_by_name(await cache.component_pods(ds))) == ["node-helper-x1"]
    assert sim.reader.stats.requests == before + 1  # from the API
    deployment = {"kind": "Deployment", "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"},
                  "spec": {"selector": {"matchLabels": {"app": "gpu-operator"}}}}
    await cache.component_pods(deployment)
    assert sim.reader.stats.requests == before + 2  # ReplicaSet-owned pods are not kept: the API
    assert await cache.component_pods({"kind": "DaemonSet", "metadata": {"name": "x"}}) == []  # no selector


async def test_a_cache_keeps_what_it_was_told_to(sim: Harness) -> None:
    """The rules come from whoever wires the cache (``Kept``): told nothing, it marks no node and
    keeps no pod whole, and its views still answer as the API would."""
    cache = sim.cache(kept=KEEP_NOTHING)
    cache.start()
    assert await cache.wait_ready(10)
    nodes = await cache.node_map()
    assert isinstance(nodes, NodeMap) and not nodes.marked
    assert gpu_node_names(nodes, set()) == gpu_node_names(dict(nodes), set())  # marks not its own: judged again
    assert not cache.stores["Pod"].full
    ds = next(d for d in await cache.list_daemonsets() if d["metadata"]["name"] == "qgpu-manager")
    before = sim.reader.stats.requests
    listed = await cache.component_pods(ds)
    assert listed and sim.reader.stats.requests == before + 1


def test_a_list_head_is_read_before_its_items() -> None:
    """The relist asks for the next page as soon as this page's continue token is known: the
    metadata the API server writes before the items, read without decoding them."""
    from bot.probes.cache import list_head

    page = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[{"x'
    assert list_head(page) == {"kind": "PodList", "apiVersion": "v1", "items": None,
                               "metadata": {"resourceVersion": "7", "continue": "abc"}}
    # items first, no items, or a head that is not JSON: no head (the page is decoded whole first)
    assert list_head(b'{"items":[],"metadata":{"continue":"abc"}}') is None
    assert list_head(b'{"kind":"PodList","metadata":{}}') is None
    assert list_head(b'{"kind":"PodList","metadata":{"continue":"a"b"},"items":[]}') is None


async def test_daemonsets_by_label_are_answered_from_the_cache_as_the_api_would(sim: Harness) -> None:
    """Every warm diagnosis asks for the node agent's DaemonSet by label: the whole DaemonSets are
    kept, so the cache matches the selector itself (the same answer, no request); a selector it
    cannot parse goes to the API, which says what is wrong with it."""
    cache = sim.cache()
    cache.start()
    assert await cache.wait_ready(10)
    for selector in ("app=qgpu-manager", "app in (qgpu-manager,nvidia-device-plugin-daemonset)", "!app", "app"):
        listed = await sim.reader.list_daemonsets(label_selector=selector)
        before = sim.reader.stats.requests
        cached = await cache.list_daemonsets(label_selector=selector)
        assert sim.reader.stats.requests == before, selector  # no API request
        assert sorted(_by_name(cached)) == sorted(_by_name(listed)), selector
    assert await cache.list_daemonsets(label_selector="app=qgpu-manager")
    with pytest.raises(Exception) as refused:  # noqa: B017 - the API's own refusal
        await cache.list_daemonsets(label_selector="app==(")
    assert not isinstance(refused.value, SelectorError)  # the cache's parser did not answer it
