"""The pod's own story end to end: through the CLI against the simulator, as JSON and as text.

The scenario expect blocks check codes and order; this checks the story itself (its JSON shape,
that it is quoted by POD_NOT_RUNNING_UNEXPLAINED, that history is marked, that a GPU-stack pod's
sandbox failure reaches the operator finding) and that a bound pod still starting is never called
a leak.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario
from bot.sim.threaded import run_in_thread
from tests.scenarios.test_why_pending import SCENARIOS, Running, _config_for, _diagnose


def _report(scenario: object, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], *,
            status: int | None = None) -> dict:
    """The JSON answer; its exit status must be ``status``, else the one its report implies
    (``tests.exit_status``: 4 with a problem found, 3 when incomplete)."""
    sim = SimCluster(scenario, workdir=tmp_path / "sim")  # type: ignore[arg-type]
    with run_in_thread(sim):
        return _diagnose(Running(sim, _config_for(sim, tmp_path / "gpubot.yaml")), args, capsys, status=status)


def _torch_pod(scenario: object) -> dict:
    return next(o for o in scenario.objects  # type: ignore[attr-defined]
                if o.get("kind") == "Pod" and o["metadata"]["name"] == "torch-job-6b8d9-x7k2p")


def test_story_json_shape_for_a_pending_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load_scenario(SCENARIOS / "hami-pending-after-node-restart-k8s130.yaml")
    report = _report(scenario, ["why-pending", "vllm-x99-0", "-n", "ml"], tmp_path, capsys)
    story = report["story"]
    assert story["pod"] == "ml/vllm-x99-0" and story["scheduler"] == "hami-scheduler" and story["node"] == ""
    assert [c["type"] for c in story["conditions"]] == ["PodScheduled"]
    (event,) = story["events"]
    assert event["source"] == "hami-scheduler" and event["count"] == 3 and event["earlier"] is True
    assert "gpu-a10-1 became Ready" in event["earlier_why"]
    # the stale message is history: no current cause is concluded from it
    assert "SCHED_UNTOLERATED_TAINT" not in [f["code"] for f in report["findings"]]


def test_running_pod_has_no_story(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load_scenario(SCENARIOS / "benign-running-after-earlier-failedscheduling-k8s129.yaml")
    report = _report(scenario, ["why-pending", "llama-ft-0", "-n", "ai"], tmp_path, capsys)
    assert "story" not in report
    assert report["findings"][0]["code"] == "POD_RUNNING"


def test_unexplained_quotes_the_story(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = copy.deepcopy(load_scenario(SCENARIOS / "benign-running-fine-v100-k8s129.yaml"))
    pod = _torch_pod(scenario)
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                     "containerStatuses": [{"name": "torch", "ready": False, "restartCount": 0, "state": {
                         "waiting": {"reason": "SomethingNew", "message": "odd runtime"}}}]}
    scenario.objects.append({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "torch-job-6b8d9-x7k2p.1", "namespace": "ai"},
        "involvedObject": {"kind": "Pod", "name": "torch-job-6b8d9-x7k2p", "namespace": "ai",
                           "uid": pod["metadata"]["uid"]},
        "reason": "FailedPostStartHook", "type": "Warning", "message": "hook said no", "count": 4,
        "lastTimestamp": "2026-05-07T10:00:00Z", "source": {"component": "kubelet"}})
    report = _report(scenario, ["why-pending", "torch-job-6b8d9-x7k2p", "-n", "ai"], tmp_path, capsys)
    codes = [f["code"] for f in report["findings"]]
    assert codes[0] == "POD_NOT_RUNNING_UNEXPLAINED", codes
    text = "\n".join(report["findings"][0]["evidence"])
    assert "container torch waiting SomethingNew: odd runtime" in text
    assert "FailedPostStartHook x4" in text
    assert report["story"]["containers"][0]["reason"] == "SomethingNew"
    assert "LEAK_LOGICAL_NOT_PHYSICAL" not in codes


def test_bound_pod_still_starting_is_not_a_leak(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A live pod that holds its card while its image is pulled leaves the card idle: not a leak."""
    scenario = copy.deepcopy(load_scenario(SCENARIOS / "benign-running-fine-v100-k8s129.yaml"))
    pod = _torch_pod(scenario)
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                     "containerStatuses": [{"name": "torch", "ready": False, "restartCount": 0, "state": {
                         "waiting": {"reason": "ErrImagePull",
                                     "message": "manifest for nvidia/cuda:11.0-base not found"}}}]}
    node = scenario.nodes["gpu-node-1"]
    node.processes = []
    for g in node.gpus:
        g.utilization_gpu, g.memory_used_mib = 0, 0
    report = _report(scenario, ["why-pending", "torch-job-6b8d9-x7k2p", "-n", "ai"], tmp_path, capsys)
    codes = [f["code"] for f in report["findings"]]
    assert "LEAK_LOGICAL_NOT_PHYSICAL" not in codes, codes
    assert report["story"]["containers"][0]["reason"] == "ErrImagePull"


def test_operand_sandbox_failure_is_in_the_operator_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load_scenario(SCENARIOS / "operator-sandbox-no-nvidia-runtime-kops.yaml")
    report = _report(scenario, ["why-pending", "llm-infer-0", "-n", "ai"], tmp_path, capsys)
    first = report["findings"][0]
    assert first["code"] == "GPU_OPERATOR_NOT_READY"
    assert any('no runtime for "nvidia" is configured' in e for e in first["evidence"])
    assert "'nvidia' handler" in first["next_steps"][0]


def test_text_shows_the_story_under_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim = SimCluster(load_scenario(SCENARIOS / "volcano-job-pending-silent-k8s122.yaml"), workdir=tmp_path / "sim")
    with run_in_thread(sim):
        config = _config_for(sim, tmp_path / "gpubot.yaml")
        code = main(["--config", str(config), "why-pending", "job-sample-gpu-0", "-n", "ai"])
        out, _ = capsys.readouterr()
    assert code in (0, 4)
    verdict_at, story_at, first_at = (out.index("Root cause:"), out.index("What the API says about it:"),
                                      out.index("1. [WARNING]  SCHED_NON_DEFAULT_SCHEDULER"))
    assert verdict_at < story_at < first_at
    assert "scheduler volcano" in out


def test_request_exceeds_only_the_nodes_it_may_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bigger node the pod's selector rules out does not make the request fit; without the
    selector, the bigger node is where it fits and nothing 'never fits'."""
    scenario = copy.deepcopy(load_scenario(SCENARIOS / "exceeds-node-4-gpus-on-2-k8s129.yaml"))
    small = next(o for o in scenario.objects if o.get("kind") == "Node")
    big = copy.deepcopy(small)
    big["metadata"].update(name="gpu-node-8", uid="0a000000-0000-4000-8000-000000000088",
                           labels={"kubernetes.io/hostname": "gpu-node-8", "pool": "big"})
    for key in ("capacity", "allocatable"):
        big["status"][key]["nvidia.com/gpu"] = "8"
    scenario.objects.append(big)
    pod = next(o for o in scenario.objects if o.get("kind") == "Pod" and o["metadata"]["name"] == "ddp-train-0")
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-node-1"}
    report = _report(scenario, ["why-pending", "ddp-train-0", "-n", "ai"], tmp_path / "a", capsys)
    first = report["findings"][0]
    assert first["code"] == "REQUEST_EXCEEDS_NODE" and "gpu-node-1" in "\n".join(first["evidence"])
    del pod["spec"]["nodeSelector"]
    report = _report(scenario, ["why-pending", "ddp-train-0", "-n", "ai"], tmp_path / "b", capsys)
    assert "REQUEST_EXCEEDS_NODE" not in [f["code"] for f in report["findings"]]


def test_unreadable_events_are_not_told_as_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed read of the events is unknown, not "no events": the story says it could not read them."""
    from bot.sim.scenario import ApiFault

    scenario = copy.deepcopy(load_scenario(SCENARIOS / "volcano-job-pending-silent-k8s122.yaml"))
    scenario.api_faults.append(ApiFault(match="/events", status=403, verb="GET"))
    # the answer is incomplete (exit 3) and the story says the events could not be read
    report = _report(scenario, ["why-pending", "job-sample-gpu-0", "-n", "ai"], tmp_path, capsys,
                     status=ExitCode.INCOMPLETE)
    assert report["story"]["events_read"] is False
    text = "\n".join(report["findings"][0]["evidence"]) if report["findings"] else ""
    assert "no events on the pod" not in text
