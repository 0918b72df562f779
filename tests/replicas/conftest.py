"""Fixtures for the several-replicas tests: a simulated API server whose clock a test sets.

The Kubernetes state backend is judged against the API server's clock, so the simulator here
runs on a ``ServerClock`` the test moves by hand (the same instants the SQLite store's tests
give their store), and every object lives in the ``gpubot`` namespace, as in a release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import Scenario, load_scenario
from bot.sim.threaded import LoopThread
from bot.state.kube import KubeState

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
NAMESPACE = "gpubot"
T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


class ManualClock:
    """A clock set by hand: the API server's in the Kubernetes backend, the file's in SQLite."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def namespace_object(name: str = NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "status": {"phase": "Active"}}


@dataclass
class StateSim:
    """A running simulator with the release namespace, and a client of it."""

    server: KubeApiServer
    kubeconfig: Path
    api_client: client.ApiClient

    def state(self, *, timeout_s: float = 10.0) -> KubeState:
        return KubeState(self.api_client, NAMESPACE, timeout_s=timeout_s)


@pytest.fixture(scope="module")
def sim_loop() -> Iterator[LoopThread]:
    loop = LoopThread("replicas-sim")
    yield loop
    loop.close()


@pytest.fixture
def start_state_sim(sim_loop: LoopThread, tmp_path: Path) -> Iterator[Callable[..., StateSim]]:
    """``start_state_sim(clock=...)`` -> a started simulator with the ``gpubot`` namespace."""
    started: list[StateSim] = []

    def start(*, clock: Callable[[], datetime] | None = None, scenario: str = "nvml-unknown-error") -> StateSim:
        sc: Scenario = load_scenario(SCENARIOS / f"{scenario}.yaml")
        kwargs: dict[str, Any] = {"clock": clock} if clock is not None else {}
        server = KubeApiServer(sc, extra_objects=[namespace_object()], **kwargs)
        sim_loop.call(server.start())
        path = write_kubeconfig(tmp_path / f"kubeconfig-state-{len(started)}", server.url)
        sim = StateSim(server, path, config.new_client_from_config(config_file=str(path)))
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.api_client.close()
        sim_loop.call(sim.server.stop())
