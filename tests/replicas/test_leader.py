"""Leader election on the ``gpubot-leader`` Lease, against the simulated API server's clock.

One holder at a time; a Lease not renewed for its duration (by the server's clock, whatever the
replicas' clocks say) is taken over; a released Lease is taken at once; and what runs "while
leader" is cancelled when leadership is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from kubernetes import client, config

from bot.state.leadership import Leadership, LeaseLock
from tests.replicas.conftest import NAMESPACE, T0, ManualClock, StateSim


def two_locks(sim: StateSim, lease_s: float = 15.0) -> tuple[LeaseLock, LeaseLock]:
    other = StateSim(sim.server, sim.kubeconfig, config.new_client_from_config(config_file=str(sim.kubeconfig)))
    return LeaseLock(sim.state(), "pod-a", lease_s=lease_s), LeaseLock(other.state(), "pod-b", lease_s=lease_s)


def holder(sim: StateSim) -> str | None:
    lease = client.CoordinationV1Api(sim.api_client).read_namespaced_lease("gpubot-leader", NAMESPACE)
    return lease.spec.holder_identity  # type: ignore[no-any-return]


def test_one_holder_and_takeover_only_after_the_lease_by_the_server_clock(
    start_state_sim: Callable[..., StateSim],
) -> None:
    clock = ManualClock()
    sim = start_state_sim(clock=clock)
    a, b = two_locks(sim)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    lease = client.CoordinationV1Api(sim.api_client).read_namespaced_lease("gpubot-leader", NAMESPACE)
    assert (lease.spec.lease_duration_seconds, lease.spec.renew_time) == (15, T0)
    clock.now = T0 + timedelta(seconds=14)
    assert not b.try_acquire_or_renew()  # still a's by the server's clock
    assert a.try_acquire_or_renew()  # a renews at T0+14
    clock.now = T0 + timedelta(seconds=28)
    assert not b.try_acquire_or_renew()
    clock.now = T0 + timedelta(seconds=29)  # a stopped renewing 15 s ago
    assert b.try_acquire_or_renew() and holder(sim) == "pod-b"
    assert not a.try_acquire_or_renew()  # the old leader finds it lost
    a.release()  # not a's any more: nothing happens
    assert holder(sim) == "pod-b"
    b.release()  # given up on shutdown: taken at once, no lease to wait out
    assert a.try_acquire_or_renew() and holder(sim) == "pod-a"


async def test_run_while_leader_runs_only_in_the_leader_and_stops_when_it_is_lost(
    start_state_sim: Callable[..., StateSim],
) -> None:
    clock = ManualClock()
    sim = start_state_sim(clock=clock)
    a_lock, b_lock = two_locks(sim, lease_s=3.0)
    a, b = Leadership(a_lock, renew_s=0.05), Leadership(b_lock, renew_s=0.05)
    runs: list[str] = []
    cancelled: list[str] = []

    def singleton(name: str) -> Callable[[], asyncio.Future[None]]:
        async def work() -> None:
            runs.append(name)
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(name)
                raise

        return lambda: asyncio.ensure_future(work())

    stop_a, stop_b = asyncio.Event(), asyncio.Event()
    tasks = [
        asyncio.create_task(a.run(stop_a)),
        asyncio.create_task(a.run_while_leader(singleton("a"))),
    ]

    async def until(predicate: Callable[[], bool]) -> None:
        for _ in range(400):
            if predicate():
                return
            await asyncio.sleep(0.025)
        raise AssertionError("condition not reached")

    await until(lambda: runs == ["a"])
    tasks += [asyncio.create_task(b.run(stop_b)), asyncio.create_task(b.run_while_leader(singleton("b")))]
    await asyncio.sleep(0.3)
    assert a.is_leader() and not b.is_leader() and runs == ["a"]
    stop_a.set()  # a shuts down: it releases the Lease, b leads at once
    await until(lambda: runs == ["a", "b"])
    assert cancelled == ["a"] and b.is_leader() and holder(sim) == b_lock.identity
    stop_b.set()
    await until(lambda: cancelled == ["a", "b"])
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
