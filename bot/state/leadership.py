"""Leader election on a coordination.k8s.io Lease, so that several replicas run singletons once.

Every replica answers slash commands and clicks (the claim on the Kubernetes API keeps a click
single); but the offer-expiry sweep, the proactive watch and its posts must run in one replica
only, or every post would appear once per replica. ``Leadership`` holds the Lease
``gpubot-leader`` in the release namespace: the holder renews it every third of
``leaseDurationSeconds``; another replica takes it over once ``renewTime + leaseDurationSeconds``
has passed by the API server's clock (the ``Date`` of the response it read the Lease with, never
its own clock), or at once when the holder released it on shutdown. Every take and renewal is a
compare-and-swap on the Lease's ``resourceVersion``, so two replicas never both win.

A leader that cannot renew for two thirds of the lease (at most the lease less 1.5 s) stops
being leader by itself (its singletons are cancelled) before anyone else may take over. ``run_while_leader`` runs a
coroutine only while this replica leads, cancelling it when leadership is lost; ``SoleLeader``
is the single-replica stand-in (SQLite state): always leader. Both keep ``contracts.Leader``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from kubernetes.client import V1Lease, V1LeaseSpec, V1ObjectMeta

from bot.errors import NotFoundError, StateStoreError, error_text
from bot.observability import log_event
from bot.state.contracts import CoroFactory
from bot.state.kube import Conflict, KubeState
from bot.state.kube_locks import create_lease, read_lease

log = logging.getLogger("gpubot.leader")

LEASE_NAME = "gpubot-leader"


class SoleLeader:
    """One replica (SQLite state): it always leads; singletons simply run."""

    def is_leader(self) -> bool:
        return True

    async def run_while_leader(self, coro_factory: CoroFactory) -> None:
        await coro_factory()

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()


class LeaseLock:
    """Acquire, renew and release one Lease through the official client (blocking calls)."""

    def __init__(self, state: KubeState, identity: str, *, name: str = LEASE_NAME, lease_s: float = 15.0) -> None:
        self.state = state
        self.identity = identity
        self.name = name
        self.lease_s = lease_s

    def _read(self) -> Any | None:
        return read_lease(self.state, self.name)

    def try_acquire_or_renew(self) -> bool:
        """True when this replica holds the Lease now (taken or renewed in this call)."""
        lease = self._read()
        now = self.state.server_time()
        if lease is None:
            body = V1Lease(metadata=V1ObjectMeta(name=self.name), spec=self._spec(now, now, 0))
            return create_lease(self.state, body)
        spec = lease.spec or V1LeaseSpec()
        holder = spec.holder_identity or ""
        if holder == self.identity:
            new_spec = self._spec(spec.acquire_time or now, now, spec.lease_transitions or 0)
        elif holder and not _expired(spec, now):
            return False
        else:
            new_spec = self._spec(now, now, (spec.lease_transitions or 0) + 1)
        lease.spec = new_spec
        try:
            self.state.call(
                self.state.coordination.replace_namespaced_lease_with_http_info, self.name, self.state.namespace, lease
            )
        except (Conflict, NotFoundError):
            return False
        return True

    def release(self) -> None:
        """Give the Lease up (shutdown): another replica may take it at once."""
        lease = self._read()
        if lease is None or lease.spec is None or lease.spec.holder_identity != self.identity:
            return
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        with contextlib.suppress(Conflict, NotFoundError):
            self.state.call(
                self.state.coordination.replace_namespaced_lease_with_http_info, self.name, self.state.namespace, lease
            )

    def _spec(self, acquired: datetime, renewed: datetime, transitions: int) -> V1LeaseSpec:
        return V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.lease_s)),
            acquire_time=acquired,
            renew_time=renewed,
            lease_transitions=transitions,
        )


def _expired(spec: V1LeaseSpec, now: datetime) -> bool:
    if spec.renew_time is None:
        return True
    return bool(spec.renew_time + timedelta(seconds=spec.lease_duration_seconds or 0) <= now)


class Leadership:
    """This replica's standing: ``run`` keeps the Lease; ``run_while_leader`` follows it."""

    def __init__(
        self,
        lock: LeaseLock,
        *,
        renew_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lock = lock
        self.lease_s = lock.lease_s
        #: the leader renews this often; followers look this often for a Lease run out
        self.renew_s = renew_s if renew_s is not None else self.lease_s / 3
        #: a leader that has not renewed for this long steps down on its own: before the Lease
        #: can run out for the others, even with ``renewTime`` a whole second behind (``Date``)
        self.deadline_s = min(self.lease_s * 2 / 3, self.lease_s - 1.5)
        self._monotonic = monotonic
        self._leading = asyncio.Event()
        self._following = asyncio.Event()
        self._following.set()
        self._renewed_at = 0.0

    def is_leader(self) -> bool:
        return self._leading.is_set() and self._monotonic() - self._renewed_at < self.deadline_s

    def _set(self, leading: bool) -> None:
        if leading == self._leading.is_set():
            return
        log_event(log, "leadership", leading=leading, identity=self.lock.identity)
        if leading:
            self._following.clear()
            self._leading.set()
        else:
            self._leading.clear()
            self._following.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Keep trying to lead until ``stop``; then release the Lease if held."""
        try:
            while not stop.is_set():
                started = self._monotonic()
                try:
                    # a hung request must not keep a leader that can no longer renew
                    held = await asyncio.wait_for(asyncio.to_thread(self.lock.try_acquire_or_renew), self.renew_s)
                except (StateStoreError, TimeoutError) as exc:
                    log.warning("leader lease not renewed: %s", error_text(exc))
                    held = False
                if held:
                    self._renewed_at = started
                    self._set(True)
                elif not self.is_leader():
                    self._set(False)
                wait = self.renew_s if self._leading.is_set() else self.renew_s / 2
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
        finally:
            leading = self._leading.is_set()
            self._set(False)
            if leading:
                with contextlib.suppress(StateStoreError):
                    await asyncio.to_thread(self.lock.release)

    async def run_while_leader(self, coro_factory: CoroFactory) -> None:
        """Run ``coro_factory()`` whenever this replica leads; cancel it when leadership ends.

        Returns only when cancelled (the caller's shutdown); a run that ends by itself while
        still leading is not restarted until leadership is lost and won again.
        """
        while True:
            await self._leading.wait()
            task = asyncio.ensure_future(coro_factory())
            lost = asyncio.ensure_future(self._following.wait())
            try:
                await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                lost.cancel()
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("a leader's task failed: %s", type(task.exception()).__name__)
            await self._following.wait()
