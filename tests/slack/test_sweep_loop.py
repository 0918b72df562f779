"""The running bot sweeps expired offers on a timer, survives a failed sweep, and stops on shutdown."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.remediation import RemediationService
from bot.server import serve, sweep_periodically
from bot.settings import load_settings
from bot.slack.transport import SlackServer
from tests.slack.helpers import FakeService, settings_for
from tests.slack.mock_slack_api import MockSlackApi


class Sweeps:
    """A sweep that counts its calls and fails once, as a Slack or SQLite hiccup would."""

    def __init__(self, *, fail_on: int = 0) -> None:
        self.calls = 0
        self.fail_on = fail_on

    async def __call__(self) -> list[Any]:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("database is locked")
        return []


async def _until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_sweeps_repeat_survive_a_failure_and_stop() -> None:
    stop = asyncio.Event()
    sweeps = Sweeps(fail_on=1)
    task = asyncio.create_task(sweep_periodically(sweeps, 0.01, stop))
    await _until(lambda: sweeps.calls >= 3)
    stop.set()
    await asyncio.wait_for(task, 1)
    calls = sweeps.calls
    await asyncio.sleep(0.05)
    assert sweeps.calls == calls


async def test_no_sweep_before_the_first_interval() -> None:
    stop = asyncio.Event()
    sweeps = Sweeps()
    task = asyncio.create_task(sweep_periodically(sweeps, 30.0, stop))
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 1)  # a set stop ends the wait at once, not after 30 s
    assert sweeps.calls == 0


class NoClients:
    """Cluster clients a sweep never needs: expiring an offer runs no action."""

    def reads_for(self, cluster_name: str) -> Any:
        raise AssertionError("the sweep read a cluster")

    def api_client_for(self, cluster_name: str) -> Any:
        raise AssertionError("the sweep wrote to a cluster")


async def test_serve_expires_offers_on_a_timer_until_shutdown(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    settings = settings_for(
        mock_slack, offer_sweep_interval_s=0.02, action_ttl_s=60, state_path=str(tmp_path / "state.db")
    )
    earlier = RemediationService(settings, NoClients())
    earlier.flow.store.clock = lambda: datetime.now(UTC) - timedelta(hours=1)  # offered an hour ago
    record = await earlier.offer("node.cordon", {"node": "gpu-1"}, cluster="", requested_by="U0ALICE")
    assert record is not None and record.state == "pending"
    stop = asyncio.Event()
    started: asyncio.Future[SlackServer] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        serve(settings, service=FakeService(), clients=NoClients(), stop=stop, started=started, configure_logs=False)
    )
    await asyncio.wait_for(asyncio.shield(started), 10)

    def expiries() -> list[str]:
        return [e.actor for e in earlier.flow.audit.query(action_id=record.id) if e.event == "expire"]

    await _until(lambda: expiries() != [])  # the state changes first, then the expiry is audited
    stop.set()
    await asyncio.wait_for(task, 10)
    assert expiries() == ["gpubot"]
    assert earlier.flow.store.get(record.id).state == "expired"  # type: ignore[union-attr]
    assert not [t for t in asyncio.all_tasks() if "sweep_periodically" in repr(t.get_coro())]


def test_the_interval_is_a_setting() -> None:
    assert load_settings(env={}).offer_sweep_interval_s == 60.0
    assert load_settings(env={"GPUBOT_OFFER_SWEEP_INTERVAL_S": "15"}).offer_sweep_interval_s == 15.0
    with pytest.raises(ConfigError, match="offer_sweep_interval_s"):
        load_settings(env={}, offer_sweep_interval_s=0)
