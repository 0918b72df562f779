"""``gpubot capture`` as a user meets it: one-line errors, no traceback, and no file clobbered."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.capture.select import gpu_node_names
from bot.commands import commands_for
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import load_scenario, scenario_from_dict
from bot.sim.scenario_include import read_yaml, resolve_base
from tests.capture.conftest import SCENARIOS, LiveSim, cli


def _one_line_error(code: int, err: str, expected_code: int) -> str:
    assert code == expected_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("gpubot: ")
    return lines[0]


def test_capture_is_not_offered_in_slack() -> None:
    assert "capture" in {c.name for c in commands_for("cli")}
    assert "capture" not in {c.name for c in commands_for("slack")}


def test_unknown_context_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "c", "kubeconfig": str(kubeconfig)}]}), encoding="utf-8")
    code, _, err = cli(
        ["--config", str(config), "capture", "--cluster", "no-such-context", "-o", str(tmp_path / "x.yaml")], capsys
    )
    line = _one_line_error(code, err, 2)
    assert "no-such-context" in line
    assert not (tmp_path / "x.yaml").exists()


def test_unreachable_api_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    config = tmp_path / "settings.yaml"
    config.write_text(
        yaml.safe_dump({"clusters": [{"name": "c", "kubeconfig": str(kubeconfig)}], "api_timeout_s": 2}),
        encoding="utf-8",
    )
    out = tmp_path / "x.yaml"
    code, _, err = cli(["--config", str(config), "capture", "-o", str(out)], capsys)
    line = _one_line_error(code, err, 1)
    assert "connection refused" in line or "unreachable" in line
    assert not out.exists()


def test_bad_names_and_values_cost_no_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, word in (
        (["capture", "-n", "Bad_NS", "-o", "-"], "Bad_NS"),
        (["capture", "--nodes", "some", "-o", "-"], "--nodes"),
        (["capture", "--node-access", "telnet", "-o", "-"], "--node-access"),
    ):
        code, _, err = cli(argv, capsys)
        assert word in _one_line_error(code, err, 2)


def test_existing_file_needs_force_and_dash_is_stdout(
    live_sim: Callable[[str], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = live_sim("hami-busy-healthy")  # 3 nodes, 2 of them GPU nodes
    out = tmp_path / "capture.yaml"
    out.write_text("mine\n", encoding="utf-8")
    base = ["--config", str(live.config), "capture", "--node-access", "ssh"]
    code, _, err = cli([*base, "-o", str(out)], capsys)
    assert "--force" in _one_line_error(code, err, 2)
    assert out.read_text(encoding="utf-8") == "mine\n"
    code, _, err = cli([*base, "-o", str(out), "--force"], capsys)
    assert code == 0, err
    assert load_scenario(out).nodes
    code, stdout, err = cli([*base, "-o", "-", "--nodes", "gpu"], capsys)
    assert code == 0, err
    assert stdout.startswith("# gpubot capture of cluster")
    doc = yaml.safe_load(stdout)
    nodes = [o for o in doc["kubernetes"]["objects"] if o["kind"] == "Node"]
    assert (
        {o["metadata"]["name"] for o in nodes}
        == set(doc["nodes"])
        == gpu_node_names(
            [o for o in live.sim.scenario.objects if o["kind"] == "Node"],
            [o for o in live.sim.scenario.objects if o["kind"] == "Pod"],
        )
    )
    everything = [o for o in load_scenario(out).objects if o["kind"] == "Node"]
    assert len(everything) == 3 > len(nodes)


def test_a_kind_it_may_not_list_is_a_note_and_pods_are_required(
    live_sim: Callable[[Any], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = resolve_base(SCENARIOS / "leak.yaml", read_yaml(SCENARIOS / "leak.yaml"))
    data["api"] = {"faults": [{"match": "/apis/batch/v1/jobs", "verb": "GET", "status": 403}]}
    live = live_sim(scenario_from_dict(data, source="jobs-forbidden"))
    out = tmp_path / "capture.yaml"
    code, _, err = cli(["--config", str(live.config), "capture", "-o", str(out), "--node-access", "ssh"], capsys)
    assert code == 0, err
    notes = yaml.safe_load(out.read_text(encoding="utf-8"))["capture"]["notes"]
    assert any(n.startswith("jobs not captured: ") and "403" in n for n in notes), notes
    data["api"] = {"faults": [{"match": "/api/v1/pods", "verb": "GET", "status": 403}]}
    live = live_sim(scenario_from_dict(data, source="pods-forbidden"))
    code, _, err = cli(["--config", str(live.config), "capture", "-o", str(tmp_path / "no.yaml")], capsys)
    assert "403" in _one_line_error(code, err, 1)
    assert not (tmp_path / "no.yaml").exists()
