"""Readings -> ``nodes:`` sections, and the selection of objects: the pure parts of capture."""

from __future__ import annotations

from typing import Any

import pytest

from bot.capture.node_facts import failed_node, iso_time
from bot.capture.select import ClusterObjects, Scope, select
from bot.errors import NodeProbeError
from bot.sim.scenario import scenario_from_dict


@pytest.mark.parametrize(
    ("error", "section"),
    [
        (NodeProbeError("n", "refused", "connection refused"), {"ssh": "unreachable", "agent": "unreachable"}),
        (NodeProbeError("n", "timeout"), {"ssh": "timeout", "agent": "unreachable"}),
        (NodeProbeError("n", "auth"), {"ssh": "auth-denied", "agent": "unreachable"}),
        (NodeProbeError("n", "host-key"), {"ssh": "wrong-host-key", "agent": "unreachable"}),
        (NodeProbeError("n", "agent-missing", "not scheduled: taint x", via="agent"), {"agent": "missing"}),
        (NodeProbeError("n", "agent-missing", "Pending: pod a", via="agent"), {"agent": "pending"}),
        (NodeProbeError("n", "agent-missing", "crash-looping: pod a, 3 restarts", via="agent"), {"agent": "crashloop"}),
        (NodeProbeError("n", "auth", "exec refused (403)", via="agent"), {"agent": "forbidden"}),
        (NodeProbeError("n", "timeout", via="agent"), {"agent": "hang"}),
        (
            NodeProbeError("n", "error", "exec in g/p: output truncated (the stream…)", via="agent"),
            {"agent": "truncated"},
        ),
    ],
)
def test_a_failed_read_becomes_the_fault_that_reproduces_it(error: NodeProbeError, section: dict[str, str]) -> None:
    out = failed_node(error)
    assert section.items() <= out.items()
    # the loader accepts every mode produced
    scenario_from_dict({"scenario": "s", "kubernetes": {"objects": []}, "nodes": {"n": out}})


def test_times_become_utc_iso() -> None:
    assert iso_time("2026-05-07T09:58:00+0000") == "2026-05-07T09:58:00Z"
    assert iso_time("2026-05-07T11:58:00+02:00") == "2026-05-07T09:58:00Z"
    assert iso_time("Thu May  7 09:58:00 2026") == "2026-05-07T09:58:00Z"
    assert iso_time("not a time") == "not a time"


def _obj(kind: str, name: str, ns: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind}-{name}"}
    if ns:
        meta["namespace"] = ns
    meta.update(extra.pop("metadata", {}))
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **extra}


def _gpu_pod(name: str, ns: str, node: str = "", **meta: Any) -> dict[str, Any]:
    limits = {"limits": {"nvidia.com/gpu": "1"}}
    return _obj(
        "Pod", name, ns, metadata=meta, spec={"nodeName": node, "containers": [{"name": "c", "resources": limits}]}
    )


def test_selection_keeps_gpu_pods_their_owners_and_the_focus_namespace() -> None:
    gpu_node = _obj("Node", "g", status={"capacity": {"nvidia.com/gpu": "8"}})
    cpu_node = _obj("Node", "c", status={"capacity": {"cpu": "8"}})
    deploy = _obj("Deployment", "train", "ai")
    rs = _obj("ReplicaSet", "train-1", "ai", metadata={"ownerReferences": [{"uid": "uid-Deployment-train"}]})
    owned = _gpu_pod("train-1-x", "ai", ownerReferences=[{"uid": "uid-ReplicaSet-train-1"}])
    web = _obj("Pod", "web", "shop", spec={"nodeName": "c", "containers": [{"name": "c"}]})
    on_gpu = _obj("Pod", "sidecar", "shop", spec={"nodeName": "g", "containers": [{"name": "c"}]})
    focus = _obj("Pod", "cpu-job", "team", spec={"nodeName": "c", "containers": [{"name": "c"}]})
    agent = _obj("Pod", "gpubot-node-g", "gpubot", metadata={"labels": {"app.kubernetes.io/name": "gpubot-node"}})
    about = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "ai"},
        "involvedObject": {"kind": "Pod", "namespace": "ai", "name": "train-1-x"},
    }
    other = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e2", "namespace": "shop"},
        "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web"},
    }
    read = ClusterObjects(
        nodes=[gpu_node, cpu_node],
        namespaces=[_obj("Namespace", n) for n in ("ai", "shop", "team")],
        pods=[owned, web, on_gpu, focus, agent],
        workloads=[deploy, rs, _obj("Deployment", "shop-web", "shop")],
        events=[about, other],
    )
    kept = select(read, Scope(namespaces=("team",)))
    assert [n["metadata"]["name"] for n in kept.nodes] == ["g", "c"]
    assert {p["metadata"]["name"] for p in kept.pods} == {"train-1-x", "sidecar", "cpu-job"}
    assert [w["metadata"]["name"] for w in kept.workloads] == ["train", "train-1"]
    assert [e["metadata"]["name"] for e in kept.events] == ["e1"]
    assert [n["metadata"]["name"] for n in select(read, Scope(nodes="gpu")).nodes] == ["g"]
    assert kept.notes == []
    assert select(read, Scope(pod=("ai", "nope"))).notes == [
        "pod ai/nope not found: its namespace was captured without it"
    ]
