"""Secrets planted in a live cluster never reach the capture file (checked on its bytes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.capture.redact import REDACTED
from bot.sim.scenario import load_scenario, scenario_from_dict
from bot.sim.scenario_include import read_yaml, resolve_base
from tests.capture.conftest import SCENARIOS, LiveSim, cli

SLACK = "xoxb-2222222222-3333333333-PlantedSlackTokenValue1"
AWS = "AKIAPLANTEDKEY123456"
PASSWORD = "correct-horse-battery-staple"
APP = "xapp-1-A0PLANTED-5555555555-deadbeefcafe"


def _planted() -> object:
    """zombie-checkpoint.yaml with tokens in env values, args, annotations and a label."""
    path = SCENARIOS / "zombie-checkpoint.yaml"
    data = resolve_base(path, read_yaml(path))  # with its base's cluster
    pods = [o for o in data["kubernetes"]["objects"] if o["kind"] == "Pod"]
    namespaces = [o for o in data["kubernetes"]["objects"] if o["kind"] == "Namespace"]
    pod = pods[0]
    container = pod["spec"]["containers"][0]
    container["env"] = [
        *container.get("env", []),
        {"name": "SLACK_BOT_TOKEN", "value": SLACK},
        {"name": "AWS_ACCESS_KEY_ID", "value": AWS},
        {"name": "DB_PASSWORD", "value": PASSWORD},
    ]
    container["args"] = [*container.get("args", []), f"--app-token={APP}", "--password", PASSWORD]
    pod["metadata"].setdefault("annotations", {})["example.com/deploy-token"] = SLACK
    pod["metadata"].setdefault("labels", {})["leaked-key"] = AWS
    namespaces[0]["metadata"].setdefault("annotations", {})["example.com/notes"] = f"ci uses {AWS}"
    return scenario_from_dict(data, source="planted")


@pytest.mark.parametrize("access", ["agent", "ssh"])
def test_planted_tokens_are_not_in_the_capture(
    access: str, live_sim: Callable[[object], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = live_sim(_planted())  # type: ignore[arg-type]
    out = tmp_path / "capture.yaml"
    code, stdout, err = cli(["--config", str(live.config), "capture", "-o", str(out), "--node-access", access], capsys)
    assert code == 0, err
    data = out.read_bytes()
    for secret in (SLACK, AWS, PASSWORD, APP):
        assert secret.encode() not in data, f"{secret[:6]}… leaked into the capture"
        assert secret not in stdout + err
    assert REDACTED.encode() in data
    assert "env values" in err  # the summary says what was removed, by count
    # still a scenario the simulator loads, with the pod that carried them
    names = {o["metadata"]["name"] for o in load_scenario(out).objects if o["kind"] == "Pod"}
    assert names
