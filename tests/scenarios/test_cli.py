"""The CLI contract beyond diagnoses: help, runbooks, validation, `gpubot sim` in the foreground."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
GPUBOT = [sys.executable, "-m", "bot.cli"]


def test_runbook_list_and_one_guide(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runbook"]) == 0
    listing = capsys.readouterr().out
    assert "guide-checkpoint-zombie" in listing and "why-pending" in listing
    assert main(["runbook", "guide-leak-triage"]) == 0
    text = capsys.readouterr().out
    assert "nvidia-smi" in text and len(text.splitlines()) > 10


def test_unknown_runbook_is_exit_2_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runbook", "guide-nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "guide-" in err


def test_runbooks_validate_clean_and_broken(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["runbooks", "validate", str(ROOT / "runbooks")]) == 0
    assert "valid" in capsys.readouterr().out
    broken = tmp_path / "rb"
    broken.mkdir()
    for f in (ROOT / "runbooks").glob("*.yaml"):
        (broken / f.name).write_text(f.read_text())
    text = (broken / "why-pending.yaml").read_text().replace("  - leak.triage\n", "  - leak.traige\n", 1)
    (broken / "why-pending.yaml").write_text(text)
    assert main(["runbooks", "validate", str(broken)]) == ExitCode.CONFIG
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "leak.traige" in x)
    file_part, line_no, _ = line.split(":", 2)
    assert file_part.endswith("why-pending.yaml") and int(line_no) > 1


def test_a_bad_runbook_override_is_a_configuration_error_for_every_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 29: a runbook that does not validate is configuration to fix (exit 2, one line
    naming file:line), not "a bug in gpubot" (exit 1), whichever command loads it."""
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    bad = overrides / "why-pending.yaml"
    bad.write_text("kind: diagnosis\nname: why-pending\nnot_a_runbook_key: 1\n", encoding="utf-8")
    assert main(["runbooks", "validate", str(overrides)]) == ExitCode.CONFIG
    assert f"{bad}:" in capsys.readouterr().out

    monkeypatch.setenv("GPUBOT_RUNBOOK_DIR", str(overrides))
    scenario = str(ROOT / "scenarios" / "zombie-checkpoint.yaml")
    for argv in (["why-pending", "p", "--scenario", scenario], ["runbook"], ["help"]):
        assert main(argv) == ExitCode.CONFIG, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"gpubot: {bad}:"), (argv, err)
        assert "internal error" not in err and "Traceback" not in err

    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    env.update({
        "GPUBOT_RUNBOOK_DIR": str(overrides), "GPUBOT_SLACK_MODE": "http", "GPUBOT_SLACK_BOT_TOKEN": "xoxb-1",
        "GPUBOT_SLACK_SIGNING_SECRET": "s", "GPUBOT_HTTP_PORT": "0", "PYTHONPATH": str(ROOT),
    })
    proc = subprocess.run([*GPUBOT, "serve"], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert proc.returncode == ExitCode.CONFIG and proc.stderr.startswith(f"gpubot: {bad}:"), proc.stderr


def test_help_and_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    proc = subprocess.run([*GPUBOT, "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0 and "why-pending" in proc.stdout and "node-status" in proc.stdout


def test_unknown_option_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why-pending", "p", "--frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why-pending", "p", "--scenario", "/nonexistent.yaml"]) == 2
    assert "scenario" in capsys.readouterr().err


def test_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(ROOT / "scenarios" / "tce-qgpu-healthy.yaml")
    assert main(["why-pending", "gpu-demo-6c9f7d-tx2lq", "-n", "ai", "--scenario", scenario, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    report = json.loads(out)
    assert report["findings"][0]["code"] == "POD_RUNNING"
    assert isinstance(report["elapsed_ms"], int)


def test_a_diagnosis_runs_without_the_cyclic_gc_and_main_gives_it_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A diagnosis runs without the cyclic collector (it only rescans churn); `main` gives it back."""
    import gc

    import bot.engine.runner as runner

    seen: list[bool] = []
    real = runner.run_diagnosis

    async def spy(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run_diagnosis", spy)
    monkeypatch.setattr("bot.service.run_diagnosis", spy)
    scenario = str(ROOT / "scenarios" / "tce-qgpu-healthy.yaml")
    assert gc.isenabled()
    assert main(["why-pending", "gpu-demo-6c9f7d-tx2lq", "-n", "ai", "--scenario", scenario, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"][0]["code"] == "POD_RUNNING"
    assert seen == [False] and gc.isenabled()
    assert main(["why-pending", "no-such-pod", "-n", "ai", "--scenario", scenario]) == ExitCode.FINDINGS
    assert gc.isenabled()


def test_sim_command_serves_kubectl_until_interrupted(tmp_path: Path) -> None:
    """`gpubot sim SCENARIO` prints a kubeconfig and a kubectl line that work, and stops on SIGINT."""
    proc = subprocess.Popen(
        [*GPUBOT, "sim", str(ROOT / "scenarios" / "untolerated-taint.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or line.startswith("serving"):
                break
            lines.append(line)
        text = "".join(lines)
        kubeconfig = next(x.split(": ", 1)[1].strip() for x in lines if x.startswith("kubeconfig:"))
        assert "ssh -p" in text and "StrictHostKeyChecking=yes" in text
        assert "kubectl --kubeconfig" in text
        got = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.returncode == 0, got.stderr
        assert "pod/bert-train-0" in got.stdout
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
