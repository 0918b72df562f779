"""``gpubot pending``: the pending GPU pods of a namespace or the cluster, grouped by root cause,
through the real CLI on fresh simulators; ``/gpu pending`` parses the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bot.pending
from bot.cli import main
from bot.commands import parse_invocation
from bot.exit_codes import ExitCode

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _pending(capsys: pytest.CaptureFixture[str], scenario: str, *argv: str) -> tuple[int, dict]:
    code = main(["pending", *argv, "--scenario", str(SCENARIOS / scenario), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_zombie_pod_is_listed_under_its_cause(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _pending(capsys, "zombie-checkpoint.yaml", "-A")
    assert code == ExitCode.FINDINGS
    assert report["command"] == "pending" and report["target"] == {"namespace": "*"}
    (cause,) = report["findings"]
    assert cause["code"] == "CHECKPOINT_ZOMBIE" and cause["title"].startswith("1 pending GPU pod(s): ")
    (line,) = cause["evidence"]
    assert line.startswith("ai/replicaset/gpu-full-5d8c6: pod gpu-full-5d8c6-q7wz2, waiting ")
    assert line.endswith("— Restart qgpu-manager on tcs-10-29-25-5, tcs-10-29-25-6")  # the fix, in words
    assert {r["action"] for r in cause["remediations"]} == {"qgpu.restart-manager", "kubelet.restart",
                                                            "checkpoint.clear"}


def test_several_causes_worst_first_and_a_namespace_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _pending(capsys, "lab-mixed-k8s131.yaml", "-A")
    assert code == ExitCode.FINDINGS
    codes = [f["code"] for f in report["findings"]]
    assert len(codes) == 3 == len(set(codes))
    assert [f["severity"] for f in report["findings"]] == sorted(
        (f["severity"] for f in report["findings"]), key=["critical", "warning", "info"].index)
    code, report = _pending(capsys, "lab-mixed-k8s131.yaml", "-n", "default")
    assert (code, report["findings"], report["target"]) == (ExitCode.OK, [], {"namespace": "default"})


def test_at_most_so_many_diagnoses_and_a_line_for_the_rest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bot.pending, "MAX_DIAGNOSED", 1)
    code, report = _pending(capsys, "lab-mixed-k8s131.yaml", "-A")
    assert len(report["findings"]) == 1
    (rest,) = [s for s in report["skipped"] if "more pending GPU pod" in s["what"]]
    assert rest["what"].startswith("a diagnosis of 2 more pending GPU pod(s) (lab ")
    assert "at most 1 are diagnosed" in rest["why"]
    assert code in (ExitCode.FINDINGS, ExitCode.INCOMPLETE)


def test_slack_takes_the_same_words() -> None:
    inv = parse_invocation(["pending", "-A"], surface="slack")
    assert (inv.command, inv.all_namespaces, inv.target()) == ("pending", True, {"namespace": "*"})
    inv = parse_invocation(["pending", "-n", "ai"], surface="slack")
    assert (inv.all_namespaces, inv.target()) == (False, {"namespace": "ai"})


async def test_slash_pending_posts_the_causes_with_their_fixes(tmp_path: Path) -> None:
    """``/gpu pending -A`` through signed HTTP: the cause's section lists the pod's workload line,
    and its fixes are offered as in a why-pending report (one picker per action over both nodes)."""
    from tests.actions.slack_rig import button_text, mock_slack_server, slack_rig

    async with mock_slack_server() as mock, slack_rig(tmp_path, mock) as rig:
        offered = await rig.command("pending -A")
        text = rig.last_report_text()
    assert "pending GPU pods in every namespace" in text
    assert "1 pending GPU pod(s): The kubelet checkpoint" in text and "`CHECKPOINT_ZOMBIE`" in text
    assert button_text("checkpoint.clear", "tcs-10-29-25-5") in offered
