"""Capture a simulated cluster through the official client and the node transport, replay the
capture in a fresh simulator, and get the same findings as the original scenario.

Each scenario is served live (``gpubot sim`` in-process), captured with ``gpubot capture``
exactly as a user would run it against their cluster (``-n`` for the namespaces the question is
about), and every ``expect`` block of the original is run against the original file and against
the capture: same codes in the same order, same subjects, and the expectation itself holds.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.commands import parse_invocation
from bot.sim.scenario import load_scenario, scenario_from_dict
from bot.sim.scenario_include import read_yaml, resolve_base
from tests import yaml_data
from tests.capture.conftest import SCENARIOS, LiveSim, cli, diagnose

#: why-pending (qGPU zombie checkpoint, a Deployment refused by a webhook, a quota), node-status
#: (a leak, a card fallen off the bus, unreachable nodes), a HAMi cluster; both node transports.
#: Agents that hang are left to tests/scenarios: a hung exec handshake can outlive its simulator
#: (the client sets no handshake timeout) and hold the CLI's asyncio.run at exit.
CASES = [
    ("zombie-checkpoint", "agent"),
    ("zombie-checkpoint", "ssh"),
    ("leak", "agent"),
    ("leak", "ssh"),
    ("unreachable-node", "ssh"),
    ("webhook-denied", "agent"),
    ("quota-gpu-rollout-k8s126", "agent"),
    ("xid79-fallen-off-bus-rtx4090", "ssh"),
    ("tce-qgpu-healthy", "agent"),
    ("hami-busy-healthy", "ssh"),
    ("devpod-gpu-pod-affinity-k3s131", "agent"),
    ("gke-gpu-selector-no-request-k8s130", "ssh"),
]


def _findings(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f.get("subject", "")) for f in report["findings"]]


@pytest.mark.parametrize(("name", "access"), CASES, ids=[f"{n}:{a}" for n, a in CASES])
def test_capture_replays_to_the_same_findings(
    name: str,
    access: str,
    live_sim: Callable[[str], LiveSim],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = SCENARIOS / f"{name}.yaml"
    expectations = load_scenario(original).expect
    assert expectations, f"{name} has no expect block to compare"
    live = live_sim(name)
    namespaces = sorted({parse_invocation(shlex.split(e.run)).namespace for e in expectations if " -n " in e.run})
    out = tmp_path / "capture.yaml"
    flags = [a for ns in namespaces for a in ("-n", ns)]
    code, _, err = cli(
        ["--config", str(live.config), "capture", "-o", str(out), "--node-access", access, *flags], capsys
    )
    assert code == 0, err
    assert f"to {out}" in err and "redacted:" in err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# gpubot capture of cluster"), text[:200]
    doc = yaml_data.load(text)
    assert doc["capture"]["node_access"] == access
    assert load_scenario(out).nodes, "the capture has no node sections"
    for exp in expectations:
        before = diagnose(exp.run, original, access, capsys)
        after = diagnose(exp.run, out, access, capsys)
        assert _findings(after) == _findings(before), f"{name}: {exp.run}"
        codes = [c for c, _ in _findings(after)]
        assert not [c for c in exp.codes if c not in codes], f"{name}: {exp.run}: {codes}"
        assert not [c for c in exp.absent if c in codes], f"{name}: {exp.run}: {codes}"
        if exp.first:
            assert codes and codes[0] in exp.first, f"{name}: {exp.run}: {codes}"


def test_unreachable_nodes_are_captured_with_the_reason(
    live_sim: Callable[[str], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = live_sim("unreachable-node")
    silent = sorted(n for n, f in live.sim.scenario.nodes.items() if f.ssh != "ok")
    assert silent
    out = tmp_path / "capture.yaml"
    code, _, err = cli(["--config", str(live.config), "capture", "-o", str(out), "--node-access", "ssh"], capsys)
    assert code == 0, err
    doc = yaml_data.load_file(out)
    for node in silent:
        assert doc["nodes"][node]["ssh"] != "ok"
        assert node in doc["capture"]["unreachable"], doc["capture"]["unreachable"]
        assert f"node {node}: ssh" in doc["capture"]["unreachable"][node]
        assert f"unreachable: node {node}" in err


def test_missing_and_crash_looping_agents_replay_as_such(
    live_sim: Callable[[Any], LiveSim], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the agent transport, nodes whose agent does not answer stay so in the capture."""
    path = SCENARIOS / "unreachable-node.yaml"
    data = resolve_base(path, read_yaml(path))
    names = sorted(data["nodes"])
    for facts in data["nodes"].values():
        facts["ssh"] = "ok"
    data["nodes"][names[0]]["agent"] = "missing"
    data["nodes"][names[1]]["agent"] = "crashloop"
    original = tmp_path / "agents.yaml"
    original.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    live = live_sim(scenario_from_dict(data, source=str(original)))
    out = tmp_path / "capture.yaml"
    code, _, err = cli(["--config", str(live.config), "capture", "-o", str(out), "--node-access", "agent"], capsys)
    assert code == 0, err
    captured = load_scenario(out).nodes
    assert (captured[names[0]].agent, captured[names[1]].agent) == ("missing", "crashloop")
    before = diagnose("node-status", original, "agent", capsys)
    after = diagnose("node-status", out, "agent", capsys)
    assert _findings(after) == _findings(before)
    missing = [s for c, s in _findings(after) if c == "NODE_AGENT_MISSING"]
    assert missing == [f"node/{names[0]}", f"node/{names[1]}"]
