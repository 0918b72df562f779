"""The plugin.* checks on odd cluster data: a finding or nothing, never a traceback.

Scenarios cover the real cases; these feed the checks objects a real cluster can still hold
(a DaemonSet without pods or template, components in unexpected namespaces, labels with odd
values, pods without status) in both modes: a pending pod, and node-status.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.commands import Invocation
from bot.engine.check import Check
from bot.engine.checks import builtin_checks
from bot.engine.facts import Facts
from tests.facts import facts as make_facts

PLUGIN_CHECKS = sorted(name for name in builtin_checks() if name.startswith("plugin."))


def node(name: str, labels: dict[str, Any] | None = None, capacity: dict[str, Any] | None = None,
         taints: list[Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []},
            "status": {"capacity": capacity or {}, "allocatable": capacity or {},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


PENDING = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
    "status": {"phase": "Pending"},
}

ODD_CONTROLLERS: list[dict[str, Any]] = [
    {"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "weird-ns"}},
    {"kind": "DaemonSet", "metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator"},
     "spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.deploy.driver": "true"},
                                    "tolerations": ["not-a-mapping", {"operator": "Exists"}]}}}},
    {"kind": "DaemonSet", "metadata": {"name": "nvidia-operator-validator", "namespace": "gpu-operator"},
     "spec": {"template": "nonsense"}, "status": {"desiredNumberScheduled": "many"}},
    {"kind": "DaemonSet", "metadata": {"name": "qgpu-manager", "namespace": "kube-system"},
     "spec": {"template": {"spec": {"affinity": {"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}}}},
    {"kind": "Deployment", "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"}},
]
ODD_PODS: list[dict[str, Any]] = [
    {"metadata": {"name": "nvidia-device-plugin-daemonset-x", "namespace": "weird-ns",
                  "ownerReferences": [{"kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset"}]},
     "spec": {"nodeName": "gpu-1"}},
    {"metadata": {"name": "nvidia-driver-daemonset-y", "namespace": "gpu-operator",
                  "ownerReferences": ["garbage"]}, "spec": {}, "status": {"phase": "Pending"}},
    {"metadata": {}, "spec": {"nodeName": "gpu-2"}, "status": {"containerStatuses": [{"state": None}]}},
]
ODD_NODES = {
    "gpu-1": node("gpu-1", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.replicas": "lots",
                            "nvidia.com/mig.config.state": "failed"},
                  {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "bogus"}),
    "gpu-2": node("gpu-2", {"nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-1g.10gb": "7"},
                  taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}, "not-a-taint"]),
    "cpu-1": node("cpu-1"),
}


def facts_for(inv: Invocation, pod: dict[str, Any] | None) -> Facts:
    return make_facts(inv.command, kind=inv.kind, name=inv.name, namespace=inv.namespace, pod=pod,
                      events=[{"message": None}, {"message": "Allocate failed: something else"}], nodes=ODD_NODES,
                      controllers=ODD_CONTROLLERS, component_pods=ODD_PODS, tables={})


@pytest.mark.parametrize("name", PLUGIN_CHECKS)
@pytest.mark.parametrize("mode", ["why-pending", "node-status"])
def test_odd_data_never_raises(name: str, mode: str) -> None:
    check: Check = builtin_checks()[name]
    if mode == "why-pending":
        inv = Invocation(command="why-pending", kind="Pod", name="p", namespace="ns")
        facts = facts_for(inv, PENDING)
    else:
        facts = facts_for(Invocation(command="node-status"), None)
    outcomes = list(check.run(facts))
    for outcome in outcomes:
        code = getattr(outcome, "code", None)
        assert code is None or code in check.emits


def test_plugin_checks_exist() -> None:
    assert PLUGIN_CHECKS == ["plugin.daemonset", "plugin.mig", "plugin.operator", "plugin.sharing"]


def _mixed_fleet(status: dict[str, Any]) -> Facts:
    """A qGPU node with its manager pod and an NVIDIA node served by another plugin; the manager's
    DaemonSet selects no nodes in its template (as a hand-written one may)."""
    manager = {"kind": "DaemonSet", "metadata": {"name": "qgpu-manager", "namespace": "qgpu", "uid": "m-uid"},
               "spec": {"selector": {"matchLabels": {"app": "qgpu-manager"}},
                        "template": {"metadata": {"labels": {"app": "qgpu-manager"}}, "spec": {"containers": []}}},
               "status": status}
    pod = {"metadata": {"name": "qgpu-manager-a", "namespace": "qgpu",
                        "ownerReferences": [{"kind": "DaemonSet", "name": "qgpu-manager", "uid": "m-uid"}]},
           "spec": {"nodeName": "qgpu-1", "containers": [{"name": "m"}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "m", "ready": True, "restartCount": 0, "state": {"running": {}}}]}}
    nodes = {"qgpu-1": node("qgpu-1", {"qgpu-device-enable": "enable"},
                            {"tke.cloud.tencent.com/qgpu-core": "400", "tke.cloud.tencent.com/qgpu-memory": "124"}),
             "a100-1": node("a100-1", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, {"nvidia.com/gpu": "8"})}
    return make_facts("node-status", nodes=nodes, controllers=[manager], component_pods=[pod], tables={})


def test_a_daemonset_whose_controller_has_every_pod_it_wants_is_not_missing_elsewhere() -> None:
    """The manager's own status says it runs everywhere it should (1 of 1): its absence from the
    NVIDIA node is the controller's choice, not a plugin down (was the first finding of
    node-status on such a fleet)."""
    found = list(builtin_checks()["plugin.daemonset"].run(
        _mixed_fleet({"desiredNumberScheduled": 1, "currentNumberScheduled": 1, "numberReady": 1})))
    assert found == []


def test_a_daemonset_short_of_a_pod_it_wants_is_reported_on_the_podless_node() -> None:
    found = list(builtin_checks()["plugin.daemonset"].run(
        _mixed_fleet({"desiredNumberScheduled": 2, "currentNumberScheduled": 1, "numberReady": 1})))
    assert [d.code for d in found] == ["DEVICE_PLUGIN_NOT_RUNNING"]
    assert found[0].params["nodes"] == "a100-1" and found[0].params["status"] == "no pod"


def test_a_gpu_node_without_cards_that_the_plugins_count_leaves_out_points_at_the_controller() -> None:
    """The DaemonSet says it runs everywhere it should, yet a GPU node has no plugin pod and
    registers no card: a stuck controller (or a selection we misread), not a taint to tolerate."""
    facts = _mixed_fleet({"desiredNumberScheduled": 1, "currentNumberScheduled": 1, "numberReady": 1})
    facts.nodes["qgpu-2"] = node("qgpu-2", {"qgpu-device-enable": "enable"},
                                 {"tke.cloud.tencent.com/qgpu-core": "0", "tke.cloud.tencent.com/qgpu-memory": "0"})
    facts.put("nodes", facts.nodes)
    found = list(builtin_checks()["plugin.daemonset"].run(facts))
    assert [d.params["nodes"] for d in found] == ["qgpu-2"]
    assert found[0].params["status"] == "not scheduled, not counted by its controller"
    assert "kube-controller-manager" in found[0].params["fix"] and "toleration" not in found[0].params["fix"]


def test_diagnoses_sharing_the_cluster_examine_each_node_once_and_say_what_one_alone_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gpubot pending``'s diagnoses share the nodes and the GPU stack (``Facts.share``): two pods
    that select the same nodes have the plugin's absence there examined once, and each gets the
    finding a diagnosis of its own would give."""
    from bot.engine.checks import plugin_daemonset

    def pending(name: str) -> dict[str, Any]:
        return {**PENDING, "metadata": {"name": name, "namespace": "ns"}}

    def diagnosis(pod: dict[str, Any]) -> Facts:
        return make_facts("why-pending", kind="Pod", name=pod["metadata"]["name"], namespace="ns", pod=pod,
                          tables={})

    base = _mixed_fleet({"desiredNumberScheduled": 2, "currentNumberScheduled": 1, "numberReady": 1})
    base.nodes["a100-1"]["status"]["allocatable"] = {"nvidia.com/gpu": "0"}  # no plugin registers its cards
    check = builtin_checks()["plugin.daemonset"]
    alone = [list(check.run(_with_fleet(diagnosis(pending(n)), base))) for n in ("p", "q")]
    examined: list[str] = []
    examine = plugin_daemonset._examine

    def counted(facts: Facts, stack: Any, node: str, *args: Any) -> None:
        examined.append(node)
        examine(facts, stack, node, *args)

    monkeypatch.setattr(plugin_daemonset, "_examine", counted)
    shared = []
    for n in ("p", "q"):
        f = diagnosis(pending(n))
        f.share(base, ["nodes", "components"])
        shared.append(list(check.run(f)))
    assert [[d.params for d in found] for found in shared] == [[d.params for d in found] for found in alone]
    assert shared[0] and shared[0][0].params["nodes"] == "a100-1"
    assert examined == ["a100-1", "qgpu-1"]  # each node short of nvidia.com/gpu, once for both diagnoses


def _with_fleet(f: Facts, fleet: Facts) -> Facts:
    """``f`` with its own copy of the fleet's nodes and GPU stack (nothing shared)."""
    f.put("nodes", dict(fleet.nodes))
    f.put("components", fleet.components)
    return f
