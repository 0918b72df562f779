"""The node and pod-state checks on hand-built facts: positive, negative and edge cases."""

from __future__ import annotations

from bot.engine.facts import TargetFacts
from bot.engine.queue_facts import DraFacts
from bot.errors import NodeProbeError
from bot.probes.nvidia_smi import GpuRow
from bot.probes.observation import NodeObservation
from tests.facts import check, codes, facts, node, only, pod, run

CRASH = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}


# ------------------------------------------------------------------ node.agent / node.reachability


def test_agent_missing_is_its_own_finding_not_unreachable() -> None:
    readings = {"g1": NodeProbeError("g1", "agent-missing", "no gpubot-node pod on g1", via="agent")}
    d = only("node.agent", readings=readings, command="node-status")
    assert (d.code, d.params) == ("NODE_AGENT_MISSING", {"node": "g1", "reason": "no gpubot-node pod on g1"})
    assert run("node.reachability", readings=readings, command="node-status") == []


def test_unreachable_names_the_transport() -> None:
    readings = {"g1": NodeProbeError("g1", "timeout"), "g2": NodeProbeError("g2", "refused", via="agent"),
                "g3": NodeObservation("g3")}
    found = run("node.reachability", readings=readings, command="node-status")
    assert [(d.params["node"], d.params["via"]) for d in found] == [
        ("g1", "SSH"), ("g2", "exec into its gpubot-node agent")]
    assert run("node.agent", readings=readings, command="node-status") == []


def test_no_readings_no_findings() -> None:
    assert run("node.agent", command="node-status") == []
    assert run("node.reachability", command="node-status") == []


# ------------------------------------------------------------------ node.conditions


def test_conditions_not_ready_with_a_kubelet_down_and_cordoned() -> None:
    nodes = [node("a", ready=False, ready_reason="NodeStatusUnknown"), node("b", unschedulable=True)]
    readings = {"a": NodeObservation("a", kubelet="inactive")}
    found = {d.code: d for d in run("node.conditions", command="node-status", nodes=nodes, readings=readings,
                                    inv_nodes=["a", "b"])}
    assert set(found) == {"NODE_NOT_READY", "NODE_CORDONED"}
    assert found["NODE_NOT_READY"].params["kubelet_down"] is True
    assert found["NODE_CORDONED"].params == {"node": "b"}


def test_conditions_an_asked_node_that_does_not_exist() -> None:
    d = only("node.conditions", command="node-status", nodes=[node("a")], inv_nodes=["zz"])
    assert d.code == "NODE_NOT_FOUND" and d.params == {"node": "zz", "nodes": "a"}


def test_conditions_healthy_nodes_say_nothing() -> None:
    assert run("node.conditions", command="node-status", nodes=[node("a"), node("b")]) == []


def test_conditions_kubelet_active_is_not_down() -> None:
    readings = {"a": NodeObservation("a", kubelet="active", kubelet_source="lease")}
    d = only("node.conditions", command="node-status", nodes=[node("a", ready=False)], readings=readings)
    assert d.params["kubelet_down"] is False and "Lease" in d.evidence[-1]


# ------------------------------------------------------------------ node.dra_devices

SLICE = {"spec": {"nodeName": "g1", "driver": "gpu.nvidia.com", "pool": {"name": "g1"},
                  "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}
CLAIM = {"status": {"allocation": {"devices": {"results": [
    {"pool": "g1", "driver": "gpu.nvidia.com", "device": "gpu-0"}]}}}}


def test_dra_devices_per_node_with_allocations() -> None:
    dra = DraFacts(version="v1", slices=[SLICE], all_claims=[CLAIM])
    d = only("node.dra_devices", command="node-status", dra_inventory=dra)
    assert d.params == {"count": "2", "nodes": "g1", "driver": "gpu.nvidia.com"}
    assert d.evidence == ("g1: gpu.nvidia.com publishes 2 device(s), 1 allocated",)


def test_dra_devices_nothing_without_the_api_or_slices() -> None:
    assert run("node.dra_devices", command="node-status", dra_inventory=DraFacts()) == []
    assert run("node.dra_devices", command="node-status", dra_inventory=DraFacts(version="v1")) == []


# ------------------------------------------------------------------ pod.lookup


def test_lookup_missing_pod_and_missing_namespace() -> None:
    d = only("pod.lookup", kind="Pod", name="gone", pod=None)
    assert d.code == "POD_NOT_FOUND" and d.params == {"what": "pod ml/gone", "pod": "gone", "namespace": "ml"}
    d = only("pod.lookup", kind="Pod", name="gone", namespace="nope", namespace_exists=False)
    assert d.params["what"] == "namespace nope"


def test_lookup_found_target_or_no_target_is_silent() -> None:
    assert run("pod.lookup", pod=pod()) == []
    assert run("pod.lookup", command="node-status") == []


def test_lookup_passes_on_suggestions() -> None:
    f = facts(kind="Pod", name="trainr")
    f.put("target", TargetFacts("Pod", "trainr", "ml", suggestions=["trainer"]))
    [d] = list(check("pod.lookup").run(f))
    assert d.evidence == ("did you mean: trainer",)


# ------------------------------------------------------------------ pod.running


def test_running_pod_with_its_node_cards() -> None:
    p = pod(node="g1", phase="Running", ready=True)
    reading = NodeObservation("g1", gpus=[GpuRow(0, "GPU-a", "A100", 90, 1000, 80000, 60, 300)])
    d = only("pod.running", pod=p, readings={"g1": reading})
    assert (d.code, d.params) == ("POD_RUNNING", {"pod": "ml/p", "node": "g1"})
    assert any("GPU0 A100: util 90" in line for line in d.evidence)


def test_running_but_unreadable_node_and_not_running() -> None:
    p = pod(node="g1", phase="Running", ready=True)
    d = only("pod.running", pod=p, readings={"g1": NodeProbeError("g1", "timeout")})
    assert "not available (ssh timeout)" in d.evidence[-1]
    assert run("pod.running", pod=pod()) == []
    assert run("pod.running", pod=pod(node="g1", phase="Running", ready=False)) == []


# ------------------------------------------------------------------ pod.status


def test_status_crash_loop_reads_the_table_row() -> None:
    p = pod(node="g1", phase="Running", waiting=CRASH)
    d = only("pod.status", pod=p)
    assert d.code == "POD_STATUS" and d.params["status"] == "CrashLoopBackOff" and d.params["container"] == "c"
    assert d.params["meaning"] and d.params["look_at"]


def test_status_oom_killed_and_terminating_take_their_own_rows() -> None:
    oom = pod(node="g1", phase="Running", waiting=CRASH, last_terminated={"reason": "OOMKilled", "exitCode": 137})
    assert only("pod.status", pod=oom).params["status"] == "OOMKilled"
    gone = pod(node="g1", phase="Running", ready=True, deleting="2026-01-01T01:00:00Z")
    assert only("pod.status", pod=gone).params["status"] == "Terminating"


def test_status_pending_running_ready_and_no_pod_say_nothing() -> None:
    assert run("pod.status", pod=pod()) == []
    assert run("pod.status", pod=pod(node="g1", phase="Running", ready=True)) == []
    assert codes("pod.status", kind="Deployment", name="app", workload={"metadata": {"name": "app"}}) == []
