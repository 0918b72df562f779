"""``gpubot act`` and ``gpubot audit`` end to end: plan, typed confirmation, the same flow and audit
trail as a Slack click, on a fresh simulator of the zombie-checkpoint scenario."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.actions.conftest import ZOMBIE_NODE, scenario

ZOMBIE = str(scenario("zombie-checkpoint"))


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state.db"
    monkeypatch.setenv("GPUBOT_STATE_PATH", str(path))
    monkeypatch.setenv("GPUBOT_NODE_READY_TIMEOUT_S", "5")
    return path


def act(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], typed: str, *argv: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    code = main(["act", *argv, "--scenario", ZOMBIE])
    return code, capsys.readouterr().out


def audit(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert main(["audit", "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_typed_target_name_runs_the_action_and_audits_it(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = act(monkeypatch, capsys, f"{ZOMBIE_NODE}\n", "checkpoint.clear", "--node", ZOMBIE_NODE)
    assert code == 0, out
    assert "blast radius:" in out and "kubernetes#116125" in out
    assert "plan:\n  1. cordon node" in out
    assert f"Type the target name ({ZOMBIE_NODE})" in out
    assert "succeeded" in out and "step 6: ok: uncordon node" in out
    entries = audit(capsys)
    events = [e["event"] for e in entries]
    assert events[:3] == ["offer", "approve", "start"] and events[-1] == "result"
    assert all(e["actor"].startswith("cli:") or e["actor"] == "gpubot" for e in entries)
    assert entries[-1]["outcome"] == "ok"


def test_wrong_name_aborts_and_is_audited(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = act(monkeypatch, capsys, "tcs-10-29-25-6\n", "kubelet.restart", "--node", ZOMBIE_NODE)
    assert code == 1
    assert "aborted" in out and "step 1" not in out
    (entry,) = audit(capsys)
    assert entry["event"] == "refuse" and entry["detail"]["reason"] == "typed confirmation did not match"


def test_dry_run_needs_no_typing_and_changes_nothing(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = act(monkeypatch, capsys, "", "checkpoint.clear", "--node", ZOMBIE_NODE, "--dry-run")
    assert code == 0, out
    assert "Type the target name" not in out
    assert "dry run" in out and "planned: ssh tcs-10-29-25-5: systemctl stop kubelet" in out
    assert all(not s.startswith("  step") or "planned:" in s for s in out.splitlines())


def test_precondition_that_does_not_hold_refuses(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = act(monkeypatch, capsys, "", "node.uncordon", "--node", ZOMBIE_NODE, "--yes")
    assert code == 1
    assert "does NOT hold" in out and "already schedulable" in out
    (entry,) = audit(capsys)
    assert entry["event"] == "refuse"


def test_bad_parameters_are_a_usage_error(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["act", "pod.delete", "--pod", "x"]) == 2
    assert "missing parameter(s) namespace" in capsys.readouterr().err
    assert main(["audit", "--since", "yesterday"]) == 2
