"""The vGPU checks on hand-built facts: odd objects give a finding or nothing, never a traceback."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.engine.checks import sched_vgpu_bypass, sched_vgpu_registration
from bot.engine.facts import Facts
from tests.facts import facts as make_facts

Obj = dict[str, Any]


def _facts(pod: Obj, *, nodes: Sequence[Obj], controllers: Sequence[Obj] = (), pods: Sequence[Obj] = (),
           namespaces: Sequence[Obj] = (), events: Sequence[Obj] = ()) -> Facts:
    return make_facts(pod=pod, events=events, nodes=nodes, namespaces=namespaces, controllers=controllers,
                      component_pods=pods)


def _pod(limits: Obj, *, scheduler: str | None = None, node: str | None = None, labels: Obj | None = None,
         annotations: Obj | None = None, phase: str = "Pending") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "ml", "labels": labels or {}, "annotations": annotations or {}},
            "spec": spec, "status": {"phase": phase}}


GPU_NODE = {"metadata": {"name": "g1", "labels": {"gpu": "on"}},
            "status": {"capacity": {"nvidia.com/gpu": "10"}, "allocatable": {"nvidia.com/gpu": "10"}}}
HAMI = {"metadata": {"name": "hami-scheduler", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "x", "command": ["scheduler", "--scheduler-name=vgpu"]}]}}}}


def _codes(check: Any, facts: Facts) -> list[tuple[str, str]]:
    return [(d.code, d.role) for d in check.CHECK.run(facts)]


def test_namespace_ignore_label_is_the_reason() -> None:
    ns = {"metadata": {"name": "ml", "labels": {"hami.io/webhook": "ignore"}}}
    facts = _facts(_pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}), nodes=[GPU_NODE], controllers=[HAMI],
                   namespaces=[ns])
    [detection] = list(sched_vgpu_bypass.CHECK.run(facts))
    assert detection.code == "VGPU_SCHEDULER_BYPASSED"
    assert detection.params["expected"] == "vgpu"  # read from --scheduler-name
    assert "hami.io/webhook=ignore" in detection.params["why"]
    assert "kubectl label namespace ml hami.io/webhook-" in detection.params["fix"]


def test_pod_on_hami_scheduler_or_placed_by_hami_is_not_bypassed() -> None:
    asks = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}
    assert not _codes(sched_vgpu_bypass, _facts(_pod(asks, scheduler="vgpu"), nodes=[GPU_NODE], controllers=[HAMI]))
    placed = _pod(asks, annotations={"hami.io/vgpu-node": "g1", "hami.io/bind-phase": "success"}, node="g1",
                  phase="Running")
    assert not _codes(sched_vgpu_bypass, _facts(placed, nodes=[GPU_NODE], controllers=[HAMI]))
    # another scheduler chosen on purpose (Volcano) is left alone
    assert not _codes(sched_vgpu_bypass, _facts(_pod(asks, scheduler="volcano"), nodes=[GPU_NODE]))


def test_plain_gpu_pod_is_hamis_only_where_hami_serves_every_gpu_node() -> None:
    pod = _pod({"nvidia.com/gpu": 1})
    plugin = {"metadata": {"name": "hami-device-plugin-x", "namespace": "kube-system"}, "spec": {"nodeName": "g1"}}
    other = {"metadata": {"name": "g2"}, "status": {"capacity": {"nvidia.com/gpu": "8"}}}
    assert _codes(sched_vgpu_bypass, _facts(pod, nodes=[GPU_NODE], pods=[plugin], controllers=[HAMI]))
    assert not _codes(sched_vgpu_bypass, _facts(pod, nodes=[GPU_NODE, other], pods=[plugin], controllers=[HAMI]))
    assert not _codes(sched_vgpu_bypass, _facts(pod, nodes=[GPU_NODE]))  # no HAMi at all: an ordinary GPU pod


def test_vcuda_pod_bound_without_predicate_is_bypassed_pending_is_not() -> None:
    asks = {"tencent.com/vcuda-core": 50, "tencent.com/vcuda-memory": 20}
    node = {"metadata": {"name": "g1"}, "status": {"capacity": {"tencent.com/vcuda-core": "400"}}}
    assert not _codes(sched_vgpu_bypass, _facts(_pod(asks), nodes=[node]))
    bound = _pod(asks, node="g1", phase="Failed")
    assert _codes(sched_vgpu_bypass, _facts(bound, nodes=[node])) == [("VGPU_SCHEDULER_BYPASSED", "")]
    predicated = _pod(asks, node="g1", annotations={"tencent.com/predicate-node": "g1"}, phase="Running")
    assert not _codes(sched_vgpu_bypass, _facts(predicated, nodes=[node]))


def test_odd_objects_never_raise() -> None:
    odd_ctrl = {"metadata": {"name": "hami-scheduler"}, "spec": {"template": {"spec": None}}}
    odd_plugin = {"metadata": {"name": "hami-device-plugin"}, "spec": {"template": None}}
    odd_pod = {"metadata": {"name": "hami-scheduler-1"}, "spec": {"containers": [{"command": "scheduler"}]},
               "status": {"phase": "Running", "containerStatuses": [None, {"state": None}]}}
    odd_node = {"metadata": {"name": "g1", "annotations": {"hami.io/node-nvidia-register": "{{{",
                                                           "hami.io/node-handshake": 7}},
                "status": {"capacity": {"nvidia.com/gpu": "lots"}}}
    odd_event = {"reason": "FailedScheduling", "message": None, "source": "nonsense"}
    pod = _pod({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 20}, scheduler="hami-scheduler")
    facts = _facts(pod, nodes=[odd_node], controllers=[odd_ctrl, odd_plugin], pods=[odd_pod], events=[odd_event])
    list(sched_vgpu_bypass.CHECK.run(facts))
    [found] = list(sched_vgpu_registration.CHECK.run(facts))
    assert found.code == "VGPU_NODE_NOT_REGISTERED"
    assert any("cannot be read" in e for e in found.evidence)


def test_registration_partial_and_other_stacks() -> None:
    registered = {"metadata": {"name": "g1", "labels": {"gpu": "on"}, "annotations": {
        "hami.io/node-nvidia-register": "GPU-1,10,23028,100,NVIDIA-NVIDIA A10,0,true:",
        "hami.io/node-handshake": "Requesting_2025-08-12 03:20:09"}},
        "status": {"capacity": {"nvidia.com/gpu": "10"}}}
    bare = {"metadata": {"name": "g2", "labels": {"gpu": "on"}}, "status": {"capacity": {}}}
    nvidia_only = {"metadata": {"name": "g3", "labels": {"nvidia.com/gpu.present": "true"}},
                   "status": {"capacity": {"nvidia.com/gpu": "8"}}}
    nv_plugin = {"metadata": {"name": "nvidia-device-plugin-daemonset-abc"}, "spec": {"nodeName": "g3"}}
    pod = _pod({"nvidia.com/gpu": 1}, scheduler="hami-scheduler")
    facts = _facts(pod, nodes=[registered, bare, nvidia_only], pods=[nv_plugin])
    [found] = list(sched_vgpu_registration.CHECK.run(facts))
    assert found.params["nodes"] == "g2"  # g3 runs NVIDIA's plugin and is not labelled for HAMi
    assert found.role == "partial"  # g1 is registered and the scheduler has not named g2 yet
    message = {"reason": "FailedScheduling", "message": "0/3 nodes are available: 1 NodeUnfitPod, 2 node unregistered.",
               "lastTimestamp": "2025-08-12T03:30:00Z"}
    facts = _facts(pod, nodes=[registered, bare, nvidia_only], pods=[nv_plugin], events=[message])
    [found] = list(sched_vgpu_registration.CHECK.run(facts))
    assert found.role == ""
    assert not list(sched_vgpu_registration.CHECK.run(_facts(_pod({"nvidia.com/gpu": 1}), nodes=[bare])))
