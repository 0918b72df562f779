"""Kueue, Volcano and KAI objects are read only where the target uses them, through one cached
discovery read, and a failed read of them is said, never concluded from (issue 32)."""

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


def _custom_paths(running: Running) -> list[str]:
    return [p for p in running.sim.api.stats.per_path if p.startswith("/apis") and "/apps/" not in p
            and "/batch/" not in p]


@pytest.mark.parametrize("running", ["benign-running-fine-v100-k8s129"], indirect=True)
def test_a_cluster_without_batch_queues_costs_no_extra_request(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    running.sim.api.stats.reset()
    report = _diagnose(running, ["why-pending", "torch-job-6b8d9-x7k2p", "-n", "ai"], capsys)
    assert "POD_RUNNING" in [f["code"] for f in report["findings"]]
    assert _custom_paths(running) == [], running.sim.api.stats.per_path


@pytest.mark.parametrize("running", ["kueue-quota-exhausted-gpu-k8s129"], indirect=True)
def test_a_pod_that_names_no_queue_costs_no_extra_request_even_where_kueue_runs(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    running.sim.api.stats.reset()
    _diagnose(running, ["why-pending", "torch-job-6b8d9-x7k2p", "-n", "ai"], capsys)
    assert _custom_paths(running) == []


@pytest.mark.parametrize("running", ["kueue-quota-exhausted-gpu-k8s129"], indirect=True)
def test_kueue_story_reads_discovery_once(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.stats.reset()
    report = _diagnose(running, ["why-pending", "job/train", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "KUEUE_NOT_ADMITTED"
    assert "cluster-queue has 0 of 2 nvidia.com/gpu free in default-flavor, needs 2 more" in first["title"]
    assert any("held by: ai/job-finetune-5f2b1 (2)" in e for e in first["evidence"])
    assert "cannot borrow (no cohort)" in first["title"], first["title"]
    paths = running.sim.api.stats.per_path
    assert sum(n for p, n in paths.items() if p.rstrip("/") == "/apis") == 1, paths


@pytest.mark.parametrize("running", ["kueue-quota-exhausted-gpu-k8s129"], indirect=True)
def test_a_failed_workload_read_is_said_not_concluded(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.faults.add(ApiFault(match="/workloads", status=500))
    report = _diagnose(running, ["why-pending", "job/train", "-n", "ai"], capsys, status=3)
    codes = [f["code"] for f in report["findings"]]
    assert not [c for c in codes if c.startswith("KUEUE_")], codes
    assert any("batch queues" in s["what"] and "500" in s["why"] for s in report["skipped"]), report["skipped"]


@pytest.mark.parametrize("running", ["kueue-quota-exhausted-gpu-k8s129"], indirect=True)
def test_kueue_not_served_is_not_installed_not_an_error(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    # discovery answers without the group (a cluster where Kueue was uninstalled): the label is the finding
    running.sim.api.faults.add(ApiFault(match="/apis/kueue.x-k8s.io", status=404))
    store = running.sim.api.store
    store.types = tuple(t for t in store.types if t.group != "kueue.x-k8s.io")
    report = _diagnose(running, ["why-pending", "job/train", "-n", "ai"], capsys)
    assert [f["code"] for f in report["findings"]][:1] == ["KUEUE_NOT_INSTALLED"]


@pytest.mark.parametrize("running", ["volcano-gang-8gpu-task-no-node-k8s130"], indirect=True)
def test_a_volcano_gang_is_one_story_not_four(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "llama-ft-worker-1", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "VOLCANO_GANG_UNSCHEDULABLE"
    assert (
        "3 of 4 tasks can be placed; llama-ft-master-0 needs 8 nvidia.com/gpu on one node, the largest free is 4"
        in first["title"]
    ), first["title"]
    assert [f["code"] for f in report["findings"]].count("VOLCANO_GANG_UNSCHEDULABLE") == 1
    assert any("minMember 4" in e for e in first["evidence"])


@pytest.mark.parametrize("running", ["benign-running-fine-v100-k8s129"], indirect=True)
def test_node_status_without_dra_reads_discovery_only(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.stats.reset()
    report = _diagnose(running, ["node-status"], capsys)
    assert "NODE_DRA_DEVICES" not in [f["code"] for f in report["findings"]]
    assert [p for p in _custom_paths(running) if p.rstrip("/") != "/apis"] == []


@pytest.mark.parametrize("running", ["dra-devices-all-allocated-k8s134"], indirect=True)
def test_dra_claim_story_names_who_holds_the_devices(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "double-gpu", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "DRA_DEVICES_EXHAUSTED"
    assert "1 of 2 allocated, it asks 2" in first["title"]
    assert any("allocated to claim ai/single-gpu-0-gpu-a1b2c: 1" in e for e in first["evidence"])


@pytest.mark.parametrize("running", ["volcano-gang-8gpu-task-no-node-k8s130"], indirect=True)
def test_a_failed_podgroup_read_is_said_not_concluded(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.faults.add(ApiFault(match="/podgroups/", status=500))
    report = _diagnose(running, ["why-pending", "llama-ft-worker-0", "-n", "ai"], capsys, status=3)
    assert not [f["code"] for f in report["findings"] if f["code"].startswith("VOLCANO_")]
    assert any("batch queues" in s["what"] for s in report["skipped"]), report["skipped"]


@pytest.mark.parametrize("running", ["volcano-gang-8gpu-task-no-node-k8s130"], indirect=True)
def test_a_volcano_job_owner_is_not_read_as_a_batch_job(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.stats.reset()
    _diagnose(running, ["why-pending", "llama-ft-worker-0", "-n", "ai"], capsys)
    assert not [p for p in running.sim.api.stats.per_path if "/apis/batch/v1/" in p and "/jobs/" in p]


@pytest.mark.parametrize("running", ["kai-queue-gpu-limit-reached-k8s130"], indirect=True)
def test_kai_queue_limit_story(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "sweep-7", "-n", "ai"], capsys)
    first = report["findings"][0]
    assert first["code"] == "KAI_QUEUE_OVER_LIMIT"
    assert "8 of its GPU limit 8 allocated, the gang asks 2 more" in first["title"], first["title"]
