"""Fixtures for the simulated Kubernetes API tests: a server on port 0 on a background loop.

Each test gets a fresh server (starting one takes milliseconds) on the module's loop thread,
so writes in one test never leak into another, while the sync official client and kubectl
subprocesses talk to it over real HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from bot.sim.kube_api import KubeApiServer
from bot.sim.kubeconfig import write_kubeconfig
from bot.sim.scenario import Scenario, load_scenario
from bot.sim.threaded import LoopThread

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def scenario_file(name: str) -> Path:
    return SCENARIOS / f"{name}.yaml"


@dataclass
class SimKube:
    """A running simulator plus the ways a test reaches it."""

    server: KubeApiServer
    kubeconfig: Path
    api_client: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api_client)

    def raw(
        self, path: str, *, method: str = "GET", body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, str], bytes]:
        """One plain HTTP request (no client retries), for checking exact wire shapes."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer anything")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def raw_json(self, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, _headers, data = self.raw(path, **kwargs)
        return status, json.loads(data)


@pytest.fixture(scope="module")
def sim_loop() -> Iterator[LoopThread]:
    loop = LoopThread("kube-sim-test")
    yield loop
    loop.close()


@pytest.fixture
def start_kube(sim_loop: LoopThread, tmp_path: Path) -> Iterator[Callable[[str | Scenario], SimKube]]:
    """``start_kube("nvml-unknown-error")`` -> a started SimKube; all are stopped after the test."""
    started: list[SimKube] = []

    def start(scenario: str | Scenario) -> SimKube:
        sc = load_scenario(scenario_file(scenario)) if isinstance(scenario, str) else scenario
        server = KubeApiServer(sc)
        sim_loop.call(server.start())
        path = write_kubeconfig(tmp_path / f"kubeconfig-{len(started)}", server.url)
        sim = SimKube(server, path, config.new_client_from_config(config_file=str(path)))
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.api_client.close()
        sim_loop.call(sim.server.stop())


@pytest.fixture
def kube(start_kube: Callable[[str | Scenario], SimKube]) -> SimKube:
    """The nvml-unknown-error cluster: two qGPU nodes, a running torch pod, qgpu-manager pods."""
    return start_kube("nvml-unknown-error")
