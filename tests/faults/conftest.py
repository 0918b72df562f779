"""The fault-injection suite (issue 14): each numbered problem driven through the simulator.

Every test injects one fault the way it happens in production (a connection dropped by the node,
two clicks on one node, a cancelled task, a Ready condition that lags, a state file that fills up,
a replica with a slow clock, a spoofed ``$USER``) and asserts the end state a person would check:
the kubelet active, the node uncordoned or truthfully reported cordoned with the reason, the
checkpoint intact or backed up, and an audit trail that says what really happened.

    test_ssh_drops.py        1. a dropped SSH connection around the kubelet steps
    test_node_lock.py        2. two actions on one node, from one or two processes; backup names
    test_cancel.py           3. cancellation mid-action; shutdown waits for a running action
    test_ready_lag.py        4. Ready that stays True after the kubelet stops
    test_audit_truth.py      5. an unwritable state file, a slow clock, USER spoofing, real outcomes
    test_slack_faults.py     8. Slack retries across replicas; Slack refusing after its retries

The node-level faults run over both node transports (``node_rig``): SSH, and exec into the node's
gpubot-actuator pod (``node_access: agent``), where a dropped exec stream is the dropped connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from bot.remediation import RemediationService
from bot.sim.cluster import SimCluster
from bot.state.records import AuditEntry
from tests.actions.conftest import NODE_ACCESS, REQUESTER, ZOMBIE_NODE, remediation_rig
from tests.actions.slack_rig import mock_slack_server
from tests.slack.mock_slack_api import MockSlackApi

NODE = ZOMBIE_NODE

Rig = Callable[..., AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]]


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    """``async with rig(**settings) as (sim, rem)``: the zombie-checkpoint simulator and a
    remediation service on a temp state file, as ``serve`` wires it."""

    def start(
        name: str = "zombie-checkpoint", **overrides: Any
    ) -> AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]:
        return remediation_rig(tmp_path, name, ready_timeout_s=10.0, **overrides)

    return start


@pytest.fixture(params=NODE_ACCESS)
def node_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Rig:
    """``rig`` with ``node_access`` set to each transport in turn."""

    def start(
        name: str = "zombie-checkpoint", **overrides: Any
    ) -> AbstractAsyncContextManager[tuple[SimCluster, RemediationService]]:
        overrides.setdefault("node_access", request.param)
        return remediation_rig(tmp_path, name, ready_timeout_s=10.0, **overrides)

    return start


async def offer(rem: RemediationService, action: str, node: str = NODE) -> str:
    record = await rem.offer(action, {"node": node}, cluster="", requested_by=REQUESTER)
    assert record is not None
    return record.id


def end_state(sim: SimCluster, node: str = NODE) -> tuple[str, bool]:
    """(kubelet state over SSH, node cordoned in the API)."""
    obj = sim.api.store.find("Node", node)
    assert obj is not None
    return sim.ssh.state(node).kubelet, bool((obj.get("spec") or {}).get("unschedulable"))


def steps_of(trail: list[AuditEntry]) -> list[tuple[str, str]]:
    """(outcome, step text) of every step entry, in order."""
    return [(e.outcome, str(e.detail.get("step"))) for e in trail if e.event == "step"]


def assert_truthful(trail: list[AuditEntry]) -> None:
    """Every step that ran was announced first, and no entry reports a failed step as ok."""
    steps = steps_of(trail)
    for n, (outcome, text) in enumerate(steps):
        assert not (outcome == "ok" and text.startswith("failed:")), text
        if outcome in ("ok", "failed") and not text.split(": ", 1)[-1].startswith(("restore:", "verify:")):
            what = text.split(": ", 1)[1].split(" — ")[0]
            assert ("starting", what) in steps[:n], f"{what!r} ran without a record before it"


def checkpoint_kept(sim: SimCluster, original: str, node: str = NODE) -> bool:
    """The original checkpoint is still in place or sits, whole, in a backup."""
    return sim.ssh.state(node).checkpoint == original or original in sim.ssh.backups(node).values()
