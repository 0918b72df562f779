"""The relist's lazy pod decode (``simdjson``) keeps exactly what decoding whole pages keeps.

A listed page goes through ``_Store.add_to`` twice, once decoded whole (orjson, the path without
``simdjson``) and once parsed lazily (``skeleton``): the slim records, the keys and the pods kept
whole must be the same, for realistic pods and for the shapes ``slim`` reads that generated pods
rarely have (sidecar init containers asking for GPUs, a deleting pod, a GPU DaemonSet's pod).
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest

from bot.probes import cache
from bot.probes.cache import _Fresh, _Store
from bot.probes.clients import GPU_KEPT
from bot.synth.generate import generate_scenario

simdjson = pytest.importorskip("simdjson")

Obj = dict[str, Any]


def _odd_pods() -> list[Obj]:
    gpu = {"nvidia.com/gpu": "2"}
    return [
        {
            "metadata": {
                "name": "sidecar-gpu",
                "namespace": "ml",
                "uid": "u-1",
                "creationTimestamp": "2026-05-01T00:00:00Z",
                "deletionTimestamp": "2026-05-02T00:00:00Z",
                "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}],
            },
            "spec": {
                "nodeName": "gpu-1",
                "initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"limits": gpu}},
                    {"name": "init", "resources": {"requests": {"nvidia.com/gpu": "4"}}},
                ],
                "containers": [{"name": "main", "resources": {"requests": gpu, "limits": gpu}}],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
        {
            "metadata": {
                "name": "nvidia-device-plugin-daemonset-abcde",
                "namespace": "gpu-operator",
                "uid": "u-2",
                "labels": {"app": "nvidia-device-plugin-daemonset"},
                "ownerReferences": [
                    {"kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset", "controller": True}
                ],
            },
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "plugin"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "plugin", "restartCount": 3}]},
        },
        {"metadata": {"name": "bare", "namespace": "default", "uid": "u-3"}, "spec": {}, "status": {}},
        {  # a GPU pod not ready, its Ready condition not first; labels but no DaemonSet; nulls
            "metadata": {
                "name": "not-ready",
                "namespace": "ml",
                "uid": "u-4",
                "labels": {"app": "trainer"},
                "deletionTimestamp": None,
                "ownerReferences": [{"kind": "ReplicaSet", "name": "trainer-7f", "controller": True}],
            },
            "spec": {"nodeName": "gpu-2", "initContainers": None, "containers": [{"name": "main", "resources": {
                "limits": gpu}}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "ContainersReady", "status": "False"},
            ]},
        },
    ]


def _page() -> bytes:
    spec = generate_scenario(nodes=20, gpu_nodes=4, pods=300, realistic=1)
    pods = [o for o in spec["kubernetes"]["objects"] if o.get("kind") == "Pod"] + _odd_pods()
    return orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": pods})


def _stored(page: bytes, lazy: bool, monkeypatch: pytest.MonkeyPatch) -> _Fresh:
    monkeypatch.setattr(cache, "simdjson", simdjson if lazy else None)
    store = _Store("Pod", threading.Lock(), GPU_KEPT)
    fresh = _Fresh()
    body = store.decode(page)
    assert isinstance(body, dict) != lazy
    store.add_to(fresh, body["items"])
    return fresh


def test_lazily_parsed_pages_keep_what_whole_pages_keep(monkeypatch: pytest.MonkeyPatch) -> None:
    page = _page()
    whole = _stored(page, False, monkeypatch)
    lazy = _stored(page, True, monkeypatch)
    assert list(lazy) == list(whole) and len(whole) > 300
    assert lazy == whole
    assert lazy.full == whole.full and ("gpu-operator", "nvidia-device-plugin-daemonset-abcde") in lazy.full
    odd = lazy["ml", "sidecar-gpu"]  # the init container runs beside the sidecar: 4 + 2
    assert odd.gpu == {"nvidia.com/gpu": 6.0} and odd.terminating and odd.ready and odd.owner == "Job/train"
    assert any(p.gpu for p in lazy.values() if p.name != "sidecar-gpu")
    not_ready = lazy["ml", "not-ready"]
    assert not_ready.ready is False and not not_ready.terminating and not_ready.owner == "ReplicaSet/trainer-7f"


def test_the_parser_is_reused_and_dropped_at_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """One parser per relist (a parser per page left its buffers resident), none between relists."""
    monkeypatch.setattr(cache, "simdjson", simdjson)
    store = _Store("Pod", threading.Lock(), GPU_KEPT)
    fresh = _Fresh()
    for _ in range(2):
        body = store.decode(_page())
        store.add_to(fresh, body["items"])
        parser = store._parser
        del body
    assert parser is not None and store._parser is parser
    store.install(fresh)
    assert store._parser is None and len(store.objects) == len(fresh)


def test_lazily_parsed_nodes_are_kept_as_whole_decoded_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node page parsed lazily keeps what ``trimmed`` keeps of a whole decoded one, images and
    ``managedFields`` left unbuilt."""
    spec = generate_scenario(nodes=30, gpu_nodes=6, pods=10, realistic=1)
    nodes = [o for o in spec["kubernetes"]["objects"] if o.get("kind") == "Node"]
    nodes[0]["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    items = [{k: v for k, v in n.items() if k != "kind"} for n in nodes]  # list items carry no kind
    page = orjson.dumps({"kind": "NodeList", "metadata": {}, "items": items})
    kept = []
    for lazy in (False, True):
        monkeypatch.setattr(cache, "simdjson", simdjson if lazy else None)
        store = _Store("Node", threading.Lock(), GPU_KEPT)
        fresh = _Fresh()
        store.add_to(fresh, store.decode(page)["items"])
        kept.append(fresh)
    assert kept[1] == kept[0] and len(kept[0]) == 30
    first = kept[1][next(iter(kept[1]))]
    assert "images" not in first["status"] and "managedFields" not in first["metadata"]
    assert first["status"]["allocatable"] and first["metadata"]["labels"]


@pytest.mark.parametrize("lazy", [False, True], ids=["whole", "lazy"])
def test_a_pods_key_is_made_of_its_records_own_strings(lazy: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relist's and a watch event's keys share the slim record's strings (its interned namespace,
    its name): a lazily parsed page gave each key two more strings of its own, about 4 MB of the
    serving process's RSS at 100,000 pods."""
    fresh = _stored(_page(), lazy, monkeypatch)
    store = _Store("Pod", threading.Lock(), GPU_KEPT)
    store.put(orjson.loads(orjson.dumps(_odd_pods()[0])))
    for key, record in [*fresh.items(), *store.objects.items()]:
        assert key[0] is record.namespace and key[1] is record.name, key
