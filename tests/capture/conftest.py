"""A live simulated cluster for capture tests, and the ``gpubot`` CLI aimed at it.

The simulator runs on its own loop thread, so the CLI under test (``bot.cli.main``, which runs
its own ``asyncio.run``) reaches it exactly as it would a real cluster: the official client over
HTTP, asyncssh to the nodes, or exec into the agent pods over the WebSocket stream.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.sim.cluster import SimCluster
from bot.sim.scenario import Scenario, load_scenario
from bot.sim.threaded import LoopThread
from tests.exit_status import assert_answered

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@dataclass
class LiveSim:
    """A started simulator and a settings file that points the CLI at it."""

    sim: SimCluster
    config: Path


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``gpubot ARGV``; (exit code, stdout, stderr)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def diagnose(run: str, scenario: Path, access: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """An expectation's command against a fresh simulator of ``scenario``: the JSON report."""
    code, out, err = cli([*shlex.split(run), "--scenario", str(scenario), "--json", "--node-access", access], capsys)
    report: dict[str, Any] = json.loads(out)
    assert_answered(code, report)
    return report


@pytest.fixture(scope="module")
def capture_loop() -> Iterator[LoopThread]:
    loop = LoopThread("capture-sim")
    yield loop
    loop.close()


@pytest.fixture
def live_sim(capture_loop: LoopThread, tmp_path: Path) -> Iterator[Callable[[str | Scenario], LiveSim]]:
    """``live_sim("zombie-checkpoint")`` -> a running simulator and a config file for ``--config``."""
    started: list[SimCluster] = []

    def start(scenario: str | Scenario) -> LiveSim:
        sc = load_scenario(SCENARIOS / f"{scenario}.yaml") if isinstance(scenario, str) else scenario
        sim = SimCluster(sc, workdir=tmp_path / f"sim{len(started)}")
        capture_loop.call(sim.start())
        started.append(sim)
        cluster = {k: v for k, v in asdict(sim.cluster_config()).items() if v not in ("", None, False)}
        config = tmp_path / f"settings{len(started)}.yaml"
        config.write_text(yaml.safe_dump({"clusters": [cluster], "ssh_user": sim.ssh.user}), encoding="utf-8")
        return LiveSim(sim, config)

    yield start
    for sim in started:
        capture_loop.call(sim.stop())
