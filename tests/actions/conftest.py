"""Fixtures of the action tests: a simulated cluster on real ports and a RemediationService on a temp SQLite file,
borrowing the clients of a ``KubeClients`` pool as ``serve`` lends the diagnosis service's.

The simulator has the remediation component installed (a gpubot-actuator pod per node). Node
actions run over each transport: ``node_rig`` is parametrized over ``NODE_ACCESS`` (``ssh``, and
``agent``: exec into the node's actuator pod through the simulator's API).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.probes.clients import KubeClients
from bot.remediation import RemediationService
from bot.sim.cluster import SimCluster
from bot.sim.scenario import Scenario, load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
#: the node transports every node action runs over (the setting ``node_access``)
NODE_ACCESS = ("ssh", "agent")
APPROVER = "U0BOB"
REQUESTER = "U0ALICE"
ZOMBIE_NODE = "tcs-10-29-25-5"


def scenario(name: str) -> Path:
    return SCENARIOS / f"{name}.yaml"


def state_changes(sim: SimCluster) -> dict[str, list[str]]:
    """Every state-changing SSH command per node, in order."""
    return {node: sim.ssh.history(node) for node in sim.ssh.targets if sim.ssh.history(node)}


def via(rem: RemediationService) -> str:
    """How node steps are named for the service's transport: "ssh" or "actuator"."""
    return "actuator" if rem.settings.node_access == "agent" else "ssh"


def step(rem: RemediationService, node: str, command: str) -> str:
    """A node step's text as the action words it: ``ssh NODE: COMMAND`` / ``actuator NODE: COMMAND``."""
    return f"{via(rem)} {node}: {command}"


def arrived_via(sim: SimCluster) -> set[str]:
    """How the node commands reached the simulated nodes: "ssh", "agent", "actuator"."""
    return {r.via for r in sim.ssh.command_log}


#: gpubot's own per-node action lock (its Lease in the release namespace): bookkeeping, not a change
LOCK_PATH = "/apis/coordination.k8s.io/v1/namespaces/gpubot/leases"


def cluster_writes(sim: SimCluster) -> list[Any]:
    """Every write to the cluster but gpubot's own node locks (``WriteRecord``s)."""
    return [w for w in sim.api.writes if not w.path.startswith(LOCK_PATH)]


def api_writes(sim: SimCluster) -> list[tuple[str, str, Any]]:
    """Every write to the cluster but gpubot's own node locks."""
    return [(w.verb, w.path, w.body) for w in cluster_writes(sim)]


Rig = Callable[..., AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]]


@asynccontextmanager
async def remediation_rig(
    tmp_path: Path, name: str | Scenario, *, ready_timeout_s: float, remediation: bool = True, **overrides: Any
) -> AsyncIterator[tuple[SimCluster, RemediationService]]:
    """A simulator of scenario ``name`` (a bundled scenario's name, or one already loaded), with the
    remediation component unless ``remediation`` is False, and a remediation service on a temp
    state file, as ``serve`` wires it (approver ``APPROVER`` for every action unless ``overrides``
    say else)."""
    loaded = load_scenario(scenario(name)) if isinstance(name, str) else name
    async with SimCluster(loaded, workdir=tmp_path / "sim", remediation=remediation) as sim:
        values: dict[str, Any] = {"approvers": {"*": (APPROVER,)}, "node_ready_timeout_s": ready_timeout_s}
        values.update(overrides)
        settings = sim.settings(**values)
        clients = KubeClients(settings)
        try:
            yield sim, RemediationService(settings, clients)
        finally:
            await clients.close()


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    """``async with rig("zombie-checkpoint", two_person_rule=True) as (sim, rem)``."""

    def start(name: str, **overrides: Any) -> AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]:
        return remediation_rig(tmp_path, name, ready_timeout_s=5.0, **overrides)

    return start


@pytest.fixture(params=NODE_ACCESS)
def node_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Rig:
    """``rig`` with ``node_access`` set to each transport in turn (node actions run over both)."""

    def start(name: str, **overrides: Any) -> AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]:
        return remediation_rig(tmp_path, name, ready_timeout_s=5.0, node_access=request.param, **overrides)

    return start


async def offer_and_click(
    rem: RemediationService, action: str, params: dict[str, str], *, user: str = APPROVER, **click: Any
) -> Any:
    """Offer as the requester, click as ``user``: the same path a Slack button takes."""
    finding = click.pop("finding", None)
    record = await rem.offer(action, params, cluster="", requested_by=REQUESTER, finding_code=finding)
    assert record is not None, f"{action} {params} could not be offered"
    return await rem.click(record.id, user, **click)
