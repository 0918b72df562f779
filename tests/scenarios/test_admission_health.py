"""Kubelet admission and lost GPUs, read as a user: which case, which fix is offered, what never shows.

The scenarios' ``expect`` blocks pin the codes; these tests pin the parts a user acts on: the
button each case offers (restart the kubelet for a stale device record, restart the plugin pod for
a plugin error or a plugin that withdrew healthy cards, cordon for a lost card) and the evidence
that tells the cases apart.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.exit_status import assert_answered

ROOT = Path(__file__).resolve().parents[2] / "scenarios"


def report(run: str, scenario: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code = main([*shlex.split(run), "--scenario", str(ROOT / scenario), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert_answered(code, answer)
    findings: list[dict[str, Any]] = answer["findings"]
    return findings


def one(findings: list[dict[str, Any]], code: str) -> dict[str, Any]:
    found = [f for f in findings if f["code"] == code]
    assert len(found) == 1, [f["code"] for f in findings]
    return found[0]


def offers(finding: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    return [(o["action"], o["params"]) for o in finding["remediations"]]


def test_stale_kubelet_record_offers_a_kubelet_restart(capsys: pytest.CaptureFixture[str]) -> None:
    findings = report("why-pending job/eval-llama-1x -n ml", "admission-stale-kubelet-k8s125.yaml", capsys)
    f = one(findings, "DEVICE_ADMISSION_FAILED")
    assert f["severity"] == "critical" and "3 pod(s) of job ml/eval-llama-1x" in f["title"]
    assert offers(f) == [("kubelet.restart", {"node": "gpu-node-03"})]
    assert any("free by the API's count 2; the kubelet said Available: 0" in e for e in f["evidence"])
    assert "record of allocated devices" in f["explanation"]


def test_lost_card_leads_and_only_the_gpu_finding_offers_the_cordon(capsys: pytest.CaptureFixture[str]) -> None:
    findings = report("why-pending deployment/detector -n vision", "admission-gpu-lost-device-plugin-231.yaml", capsys)
    lost, admission = findings[0], one(findings, "DEVICE_ADMISSION_FAILED")
    assert lost["code"] == "GPU_LOST" and lost["severity"] == "critical"
    assert offers(lost) == [("node.cordon", {"node": "node-11"})]
    assert offers(admission) == []  # one cordon button, on the card's finding
    assert "7 pod(s) of deployment vision/detector" in admission["title"]
    assert any("Xid 79" in e for e in lost["evidence"]) and any("GPU is lost" in e for e in lost["evidence"])
    assert any("rejected with the same message" in e for e in admission["evidence"])


def test_xid79_on_node_status_names_the_card_and_the_table_row(capsys: pytest.CaptureFixture[str]) -> None:
    findings = report("node-status", "xid79-fallen-off-bus-rtx4090.yaml", capsys)
    lost = one(findings, "GPU_LOST")
    assert "node1" in lost["title"] and "0000:a1:00" in lost["explanation"]
    assert any("the card stopped answering on PCIe" in e for e in lost["evidence"])  # the runbook's Xid table


def test_plugin_error_offers_to_restart_the_plugin_pod(capsys: pytest.CaptureFixture[str]) -> None:
    f = one(report("why-pending cuda-vector-add -n default", "admission-mig-mixed-dgx-a100.yaml", capsys),
            "DEVICE_ADMISSION_FAILED")
    assert offers(f) == [("pod.delete", {"namespace": "kube-system", "pod": "nvidia-device-plugin-daemonset-r8vjz"})]
    assert "MIG strategy" in f["explanation"] and "Insufficient Permissions" in f["explanation"]


def test_topology_rejection_is_told_apart(capsys: pytest.CaptureFixture[str]) -> None:
    findings = report("why-pending mt-l-x86iamx-88-900-h100-4-2pfzt-runner-26mj5-workflow -n arc-runners",
                      "admission-topology-h100-eks.yaml", capsys)
    f = findings[0]
    assert f["code"] == "DEVICE_ADMISSION_FAILED" and "TopologyAff" in f["title"] and offers(f) == []
    assert "NUMA" in f["explanation"]


def test_withdrawn_card_with_errors_is_the_cause_and_offers_a_cordon(capsys: pytest.CaptureFixture[str]) -> None:
    findings = report("why-pending mixtral-finetune-launcher-5m8qk -n llm", "gpu-unhealthy-xid94-h100.yaml", capsys)
    f = findings[0]
    assert f["code"] == "GPU_UNHEALTHY" and f["severity"] == "critical" and "Xid 94" in f["title"]
    assert offers(f) == [("node.cordon", {"node": "gpu-h100-07"})]
    assert [x["code"] for x in findings].index("SCHED_INSUFFICIENT_GPU") > 0


def test_plugin_that_withdrew_a_healthy_card_offers_its_restart(capsys: pytest.CaptureFixture[str]) -> None:
    for run in ("why-pending reranker-5d6c9b7f8-wz4tn -n team-a", "node-status"):
        f = report(run, "device-plugin-unhealthy-after-kubelet-restart.yaml", capsys)[0]
        assert f["code"] == "GPU_UNHEALTHY" and "gpu-worker-1" in f["title"]
        plugin = {"namespace": "nvidia-device-plugin", "pod": "nvdp-nvidia-device-plugin-7rj2d"}
        assert offers(f) == [("pod.delete", plugin)]
        assert any("nvidia-smi reads all 1 card(s)" in e for e in f["evidence"])


@pytest.mark.parametrize(
    ("scenario", "runs"),
    [
        ("guard-busy-healthy-a100-aks.yaml", ["node-status", "why-pending eval-harness-6f7d9c5b8-lq2vz -n training"]),
        ("guard-app-xid31-job-error.yaml", ["node-status", "why-pending job/mesh-refine-dev -n cfd"]),
    ],
)
def test_busy_healthy_nodes_raise_none_of_it(
    scenario: str, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    quiet = {"DEVICE_ADMISSION_FAILED", "GPU_LOST", "GPU_UNHEALTHY", "LEAK_LOGICAL_NOT_PHYSICAL", "CHECKPOINT_ZOMBIE"}
    for run in runs:
        codes = {f["code"] for f in report(run, scenario, capsys)}
        assert not codes & quiet, (run, codes)


def test_no_healthy_devices_with_healthy_slices_blames_the_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    f = one(report("why-pending cuda-vectoradd-58 -n default", "admission-mig-no-healthy-devices.yaml", capsys),
            "DEVICE_ADMISSION_FAILED")
    assert "nvidia.com/mig-1g.5gb" in f["explanation"] and "restarting" in f["explanation"]
    assert offers(f) == []  # a plugin that keeps restarting is not helped by one more restart
    assert any("CrashLoopBackOff (57 restarts)" in e for e in f["evidence"])
    assert any("4 restart(s)" in e for e in f["evidence"])
