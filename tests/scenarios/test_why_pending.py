"""why-pending end to end against a simulator running in a background thread, through the CLI.

Covers what the scenario expect blocks cannot: bad input costs no API request and no SSH command,
diagnoses never write, API faults give a partial report that says what was skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario
from bot.sim.threaded import run_in_thread
from tests.exit_status import assert_answered

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


@dataclass
class Running:
    sim: SimCluster
    config: Path


def _config_for(sim: SimCluster, path: Path, **extra: object) -> Path:
    cluster = sim.cluster_config()
    data = {
        "clusters": [
            {
                "name": cluster.name,
                "kubeconfig": cluster.kubeconfig,
                "context": cluster.context,
                "ssh_targets": dict(cluster.ssh_targets),
                "ssh_known_hosts": cluster.ssh_known_hosts,
                "ssh_key_path": cluster.ssh_key_path,
            }
        ],
        "ssh_user": sim.ssh.user,
        "ssh_deadline_s": 3.0,
        # these tests check the SSH command log: read over SSH (auto would find the sim's agents)
        "node_access": "ssh",
        **extra,
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def running(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    name = getattr(request, "param", "untolerated-taint")
    sim = SimCluster(load_scenario(SCENARIOS / f"{name}.yaml"), workdir=tmp_path / "sim")
    with run_in_thread(sim):
        yield Running(sim, _config_for(sim, tmp_path / "gpubot.yaml"))


def _run(running: Running, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*argv, "--config", str(running.config)] if argv[0] != "--config" else argv)
    out, err = capsys.readouterr()
    return code, out, err


def _diagnose(
    running: Running, args: list[str], capsys: pytest.CaptureFixture[str], *, status: int | None = None
) -> dict:
    code = main(["--config", str(running.config), *args, "--json"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    if status is None:
        assert_answered(code, report)
    else:
        assert code == status, err
    return report


BAD_NAMES = [
    "gpu;reboot",
    "$(curl evil)",
    "`id`",
    "a && rm -rf /",
    "../../etc/passwd",
    "pod\nname",
    "ünïcødé-pod",
    "Pod-With-Caps",
    "",
    "x" * 10_000,
    "deployment/a|b",
]


@pytest.mark.parametrize("bad", BAD_NAMES, ids=lambda b: ascii(b[:20]))
def test_bad_names_exit_2_with_one_line_and_cost_nothing(
    running: Running, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    running.sim.api.stats.reset()
    code = main(["--config", str(running.config), "why-pending", bad, "-n", "research"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gpubot: ")
    assert "Traceback" not in err
    assert running.sim.api.stats.requests == 0
    assert running.sim.ssh.command_log == []


def test_bad_namespace_exit_2(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--config", str(running.config), "why-pending", "bert-train-0", "-n", "Bad_NS"])
    assert code == 2
    assert running.sim.api.stats.requests == 0


# That no diagnosis writes (nothing reaches the API, every node read is allow-listed) is checked
# on every scenario's expectations, through both readers, in test_expect_readers.py.


def test_not_found_suggests_close_names(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    report = _diagnose(running, ["why-pending", "bert-trian-0", "-n", "research"], capsys)
    (finding,) = [f for f in report["findings"] if f["code"] == "POD_NOT_FOUND"]
    assert any("bert-train-0" in e for e in finding["evidence"])
    report = _diagnose(running, ["why-pending", "bert-train-0", "-n", "reserch"], capsys)
    (finding,) = [f for f in report["findings"] if f["code"] == "POD_NOT_FOUND"]
    assert "namespace" in finding["title"] + " ".join(finding["evidence"]) + finding["explanation"]
    assert any("research" in e for e in finding["evidence"])


def test_events_api_failing_gives_partial_report(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    # Every events request fails: the taint is still computed from nodes and tolerations.
    running.sim.api.faults.add(ApiFault(match="/events", status=500))
    report = _diagnose(running, ["why-pending", "bert-train-0", "-n", "research"], capsys, status=3)
    codes = [f["code"] for f in report["findings"]]
    assert "SCHED_UNTOLERATED_TAINT" in codes
    assert any(s["what"] == "events" and "500" in s["why"] for s in report["skipped"]), report["skipped"]


def test_transient_429_and_500_are_retried(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.faults.add(ApiFault(match="/api/v1/nodes", status=503, times=1))
    running.sim.api.faults.add(ApiFault(match="/pods/bert-train-0", status=500, times=1))
    report = _diagnose(running, ["why-pending", "bert-train-0", "-n", "research"], capsys)
    assert "SCHED_UNTOLERATED_TAINT" in [f["code"] for f in report["findings"]]
    assert report["skipped"] == []


def test_pod_read_failing_is_reported_not_crashed(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    running.sim.api.faults.add(ApiFault(match="/pods/bert-train-0", status=500))
    report = _diagnose(running, ["why-pending", "bert-train-0", "-n", "research"], capsys, status=3)
    assert any(s["what"] == "the pod or workload" for s in report["skipped"])


def test_text_output_is_readable(running: Running, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--config", str(running.config), "why-pending", "bert-train-0", "-n", "research"])
    out, _ = capsys.readouterr()
    assert code == ExitCode.FINDINGS  # a complete diagnosis that found the cause
    assert "SCHED_UNTOLERATED_TAINT" in out and "nvidia.com/gpu" in out
    assert 'operator: "Exists"' in out or "operator: Exists" in out


def test_slow_api_times_out_into_a_partial_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An events endpoint that hangs costs at most the request timeout (and its retries), never the command."""
    import time

    sim = SimCluster(load_scenario(SCENARIOS / "untolerated-taint.yaml"), workdir=tmp_path / "sim")
    with run_in_thread(sim):
        config = _config_for(sim, tmp_path / "gpubot.yaml", api_timeout_s=0.5)
        sim.api.faults.add(ApiFault(match="/events", delay_s=1.5))
        started = time.monotonic()
        report = _diagnose(Running(sim, config), ["why-pending", "bert-train-0", "-n", "research"], capsys, status=3)
        elapsed = time.monotonic() - started
    assert "SCHED_UNTOLERATED_TAINT" in [f["code"] for f in report["findings"]]
    assert any(s["what"] == "events" for s in report["skipped"]), report["skipped"]
    assert elapsed < 4.5, f"took {elapsed:.1f}s"
