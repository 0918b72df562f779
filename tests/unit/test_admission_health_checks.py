"""The admission and GPU-health checks on odd data: a clear finding or nothing, never a traceback."""

from __future__ import annotations

from typing import Any

from bot.commands import Invocation
from bot.engine.checks import health_gpus, pod_admission
from bot.engine.facts import Facts, TargetFacts
from bot.engine.runbooks import load_runbooks
from bot.errors import NodeProbeError
from bot.probes.gpu_health import EccReading, LostGpu, XidEvent
from bot.probes.node import NodeObservation
from bot.probes.nvidia_smi import GpuRow
from bot.probes.slim import SlimPod
from tests.facts import facts as make_facts

RUNBOOKS = load_runbooks()


def facts_for(command: str, *, pods: list[dict[str, Any]], nodes: dict[str, Any], readings: dict[str, Any],
              workload: bool = True, components: list[dict[str, Any]] | None = None,
              node_pods: dict[str, list[SlimPod]] | None = None) -> Facts:
    kind = "Deployment" if workload else ("Pod" if command == "why-pending" else "")
    return make_facts(command, kind=kind, name="app" if kind else "", pods=pods, pod=pods[0] if pods else None,
                      workload={"metadata": {"name": "app"}} if workload else None, nodes=nodes,
                      node_pods=node_pods, readings=readings, component_pods=components or [])


def gpu_node(name: str, cap: int, alloc: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {},
            "status": {"capacity": {"nvidia.com/gpu": str(cap)}, "allocatable": {"nvidia.com/gpu": str(alloc)}}}


def rejected(name: str, node: str, reason: str, message: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Failed", "reason": reason, "message": message}}


def test_rejections_on_a_vanished_node_an_unreachable_node_and_an_unknown_reason() -> None:
    pods = [
        rejected("a", "gone-node", "UnexpectedAdmissionError",
                 "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                 "Requested: 1, Available: 0, which is unexpected"),
        rejected("b", "dark-node", "SomethingNew", "Pod was rejected: the frobnicator said no"),
        {"metadata": None, "spec": "garbage", "status": {"phase": "Failed"}},
    ]
    facts = facts_for("why-pending", pods=pods, nodes={"dark-node": gpu_node("dark-node", 4, 4)},
                      readings={"dark-node": NodeProbeError("dark-node", "timeout", "no answer")},
                      components=[{"metadata": None}, {"spec": {"nodeName": "dark-node"}, "metadata": {"name": "x"}}])
    found = {d.params["node"]: d for d in pod_admission.run(facts)}
    assert set(found) == {"gone-node", "dark-node"}
    assert found["gone-node"].role == "full" and any("no longer exists" in e for e in found["gone-node"].evidence)
    other = found["dark-node"]
    assert other.role == "other" and other.params["message"] == "the frobnicator said no"
    assert other.params["meaning"] and other.params["look_at"]  # the table's catch-all row
    assert any("physical checks incomplete (ssh timeout)" in e for e in other.evidence)
    assert list(health_gpus.run(facts)) == []  # nothing known about the cards: no guess


def test_unknown_xid_falls_back_to_the_catch_all_row_and_app_xids_stay_quiet() -> None:
    obs = NodeObservation(node="n1", gpus=[GpuRow(0, "GPU-a", "A100", 0, 0, 40960, 30, 50)], ecc_read=True,
                          kernel_log="journal")
    obs.xids = [XidEvent("0000:1a:00", 13, "t", "1", "p", "text", "raw"),
                XidEvent("0000:1a:00", 154, "t", "", "", "GPU recovery action changed", "raw"),
                XidEvent("", 31, "t", "", "", "", "raw")]
    facts = facts_for("node-status", pods=[], nodes={"n1": gpu_node("n1", 1, 1)}, readings={"n1": obs}, workload=False)
    facts.inv = Invocation("node-status")
    facts.put("target", TargetFacts("", "", ""))
    found = list(health_gpus.run(facts))
    assert [(d.code, d.role) for d in found] == [("GPU_UNHEALTHY", "watch")]
    assert "Xid 154" in found[0].params["what"] and "Xid 13" not in found[0].params["what"]


def test_lost_card_without_address_and_ecc_without_address_do_not_crash() -> None:
    obs = NodeObservation(node="n1", gpus=[GpuRow(0, "GPU-a", "A100", 0, 0, 40960, 30, 50),
                                           GpuRow(2, "GPU-c", "A100", 0, 0, 40960, 30, 50)],
                          ecc=[EccReading("", "Enabled", 3, 3, None, None, None)], ecc_read=True, kernel_log="dmesg",
                          lost_gpus=[LostGpu("", None, "query", "GPU ? [GPU is lost]")])
    facts = facts_for("node-status", pods=[], nodes={"n1": gpu_node("n1", 3, 2)}, readings={"n1": obs}, workload=False)
    facts.inv = Invocation("node-status")
    facts.put("target", TargetFacts("", "", ""))
    codes = sorted(d.code for d in health_gpus.run(facts))
    assert codes == ["GPU_LOST", "GPU_UNHEALTHY"]


def test_a_missing_index_and_a_registered_card_nvidia_smi_no_longer_lists() -> None:
    from bot.probes.checkpoint import parse_checkpoint

    cp = parse_checkpoint('{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"nvidia.com/gpu":'
                          '["GPU-a","GPU-b","GPU-c::0","GPU-c::1","MIG-x"]}},"Checksum":1}')
    obs = NodeObservation(node="n1", gpus=[GpuRow(0, "GPU-a", "A100", 0, 0, 1, 30, 50),
                                           GpuRow(2, "GPU-c", "A100", 0, 0, 1, 30, 50)],
                          checkpoint=cp, ecc_read=True, kernel_log="journal")
    facts = facts_for("node-status", pods=[], nodes={"n1": gpu_node("n1", 3, 3)}, readings={"n1": obs}, workload=False)
    facts.inv = Invocation("node-status")
    facts.put("target", TargetFacts("", "", ""))
    (lost,) = list(health_gpus.run(facts))
    assert lost.code == "GPU_LOST" and lost.params["count"] == 2  # index 1 missing; GPU-b registered, not listed


def test_an_unreadable_kernel_log_is_a_skipped_note_not_a_finding() -> None:
    from bot.report import Skipped

    obs = NodeObservation(node="n1", gpus=[GpuRow(0, "GPU-a", "A100", 0, 0, 40960, 30, 50)], ecc_read=True)
    facts = facts_for("node-status", pods=[], nodes={"n1": gpu_node("n1", 1, 1)}, readings={"n1": obs}, workload=False)
    facts.inv = Invocation("node-status")
    facts.put("target", TargetFacts("", "", ""))
    (only,) = list(health_gpus.run(facts))
    assert isinstance(only, Skipped) and only.what == "Xid check on n1"


def test_rejections_older_than_a_running_replica_are_past() -> None:
    old = rejected("app-1", "n1", "UnexpectedAdmissionError",
                   "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
                   "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")
    running = {"metadata": {"name": "app-2", "namespace": "ml", "creationTimestamp": "2025-01-02T00:00:00Z"},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                          "containerStatuses": [{"name": "c", "ready": True, "image": "i", "imageID": "x",
                                                 "restartCount": 0, "state": {"running": {}}}]}}
    facts = facts_for("why-pending", pods=[old, running], nodes={"n1": gpu_node("n1", 2, 2)}, readings={})
    (found,) = list(pod_admission.run(facts))
    assert found.role == "past" and not found.params["stale"]
    assert any("these rejections are past" in e for e in found.evidence)
    finding = RUNBOOKS.template("DEVICE_ADMISSION_FAILED").render(dict(found.params), role=found.role)
    assert finding.severity == "warning" and finding.remediations == []


def _not_ready_node(name: str) -> dict[str, Any]:
    node = gpu_node(name, 8, 8)
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
    return node


def test_kubelet_reading_unknown_does_not_claim_the_kubelet_is_down() -> None:
    """An agent without the host's systemd reads "unknown": the restart offer must not follow from it."""
    from bot.engine.checks import node_conditions

    cases = {"gpu-a": "unknown", "gpu-b": "inactive", "gpu-c": "failed", "gpu-d": "active"}
    readings = {name: NodeObservation(node=name, kubelet=state) for name, state in cases.items()}
    facts = facts_for("node-status", pods=[], workload=False, readings=readings,
                      nodes={name: _not_ready_node(name) for name in cases})
    found = {d.params["node"]: d.params["kubelet_down"] for d in node_conditions.run(facts)
             if d.code == "NODE_NOT_READY"}
    assert found == {"gpu-a": False, "gpu-b": True, "gpu-c": True, "gpu-d": False}
