"""Custom batch workloads as targets (JobSet, RayJob, MPIJob, Volcano Job) and the DRA stories
that rest on extra reads: what is read, and that a read that fails is said, never concluded from
(issue 32)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario
from bot.sim.threaded import run_in_thread
from tests.scenarios.test_why_pending import SCENARIOS, Running, _config_for, _diagnose


@pytest.fixture
def running(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    sim = SimCluster(load_scenario(SCENARIOS / f"{request.param}.yaml"), workdir=tmp_path / "sim")
    with run_in_thread(sim):
        yield Running(sim, _config_for(sim, tmp_path / "gpubot.yaml"))


@pytest.mark.parametrize("running", ["kueue-mpijob-gpu-quota-k8s130"], indirect=True)
def test_an_mpijob_is_read_where_served_and_its_workload_by_owner(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    running.sim.api.stats.reset()
    report = _diagnose(running, ["why-pending", "mpijob/tf-bench-2", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "KUEUE_NOT_ADMITTED"
    assert "mpijob-tf-bench-2-8caef" in " ".join(first["evidence"])
    paths = running.sim.api.stats.per_path
    assert any(p.startswith("/apis/kubeflow.org/v2beta1/namespaces/ai/mpijobs/tf-bench-2") for p in paths), paths


@pytest.mark.parametrize("running", ["kueue-mpijob-gpu-quota-k8s130"], indirect=True)
def test_a_kind_the_cluster_does_not_serve_is_not_found(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "rayjob/tf-bench-2", "-n", "ai"], capsys)
    assert [f["code"] for f in report["findings"]][:1] == ["POD_NOT_FOUND"]


@pytest.mark.parametrize("running", ["kueue-healthy-jobset-admitted-k8s130"], indirect=True)
def test_a_jobset_pod_reaches_its_workload_through_job_and_jobset(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _diagnose(running, ["why-pending", "llm-pretrain-workers-0-0-7xk2p", "-n", "ai"], capsys)
    admitted = [f for f in report["findings"] if f["code"] == "KUEUE_ADMITTED"]
    assert admitted and "jobset-llm-pretrain-3f9a1" in " ".join(admitted[0]["evidence"])


@pytest.mark.parametrize("running", ["volcano-vcjob-queue-capability-no-pods-k8s130"], indirect=True)
def test_a_vcjob_without_pods_finds_its_podgroup_by_owner(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "vcjob/dlp-stage-ecu-test6", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "VOLCANO_QUEUE_OVER_CAPABILITY"
    assert "nvidia.com/gpu: allocated 6 + the gang's 4 > capability 8" in first["title"], first["title"]


@pytest.mark.parametrize("running", ["dra-claim-reserved-by-gone-pod-k8s134"], indirect=True)
def test_a_stale_reservation_names_the_claim_and_the_gone_pod(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _diagnose(running, ["why-pending", "double-gpu", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "DRA_CLAIM_STALE_RESERVATION"
    assert "ai/single-gpu" in first["title"] and "pod0" in first["title"], first["title"]


@pytest.mark.parametrize("running", ["dra-claim-reserved-by-gone-pod-k8s134"], indirect=True)
def test_a_reserving_pod_that_cannot_be_read_is_not_called_gone(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    running.sim.api.faults.add(ApiFault(match="/api/v1/namespaces/ai/pods/pod0", status=500))
    report = _diagnose(running, ["why-pending", "double-gpu", "-n", "ai"], capsys)
    codes = [f["code"] for f in report["findings"]]
    assert "DRA_CLAIM_STALE_RESERVATION" not in codes
    first = report["findings"][0]
    assert first["code"] == "DRA_DEVICES_EXHAUSTED"
    assert any("could not check who reserves ai/single-gpu" in e for e in first["evidence"]), first["evidence"]


@pytest.mark.parametrize("running", ["dra-selector-memory-no-match-k8s134"], indirect=True)
def test_a_selector_no_device_matches_says_which(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "train-large", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "DRA_SELECTOR_NO_MATCH"
    assert any("lets 0 of 2 device(s) through" in e and "64Gi" in e for e in first["evidence"]), first["evidence"]
    assert any("capacity memory=32Gi" in e for e in first["evidence"])


@pytest.mark.parametrize("running", ["dra-kubelet-plugin-crashloop-k8s134"], indirect=True)
def test_the_plugin_on_the_claims_node_leads(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "nccl-test-worker-0", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "DRA_DRIVER_PLUGIN_NOT_READY"
    assert "gpu-node-1" in first["title"] and "CrashLoopBackOff" in first["title"], first["title"]


@pytest.mark.parametrize("running", ["kai-parent-queue-gpu-limit-k8s130"], indirect=True)
def test_a_full_kai_parent_holds_its_child_back(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "sweep-7", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "KAI_PARENT_QUEUE_OVER_LIMIT"
    assert "parent queue default (above team-b)" in first["title"], first["title"]
    assert "8 of its GPU limit 8 allocated, the gang asks 2 more" in first["title"]


@pytest.mark.parametrize("running", ["dra-kubelet-plugin-crashloop-k8s134"], indirect=True)
def test_unreadable_plugin_pods_are_said_not_concluded(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.faults.add(ApiFault(match="/api/v1/namespaces/nvidia-dra-driver-gpu/pods", status=403))
    report = _diagnose(running, ["why-pending", "nccl-test-worker-0", "-n", "ai"], capsys)
    codes = [f["code"] for f in report["findings"]]
    assert "DRA_DRIVER_PLUGIN_NOT_READY" not in codes, codes
    dra = [f for f in report["findings"] if f["code"].startswith("DRA_")]
    assert dra and any("could not read the DRA drivers' kubelet-plugin pods" in e for e in dra[0]["evidence"])
