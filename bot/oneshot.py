"""One-shot runs from a terminal: on the configured cluster, or on a fresh simulator of a scenario.

``gpubot why-pending …`` (and the other diagnoses) and ``gpubot act`` run here: each builds what
it needs (a ``Service``; for ``act`` only the cluster clients, no runbooks), runs once and closes
it. The CLI parses arguments and prints, the demo strings runs together; both call this module
and neither imports the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from bot.commands import Invocation
from bot.engine.progress import Progress, no_progress
from bot.errors import GpubotError
from bot.probes.clients import KubeClients
from bot.report import Report
from bot.service import Service
from bot.settings import Settings

if TYPE_CHECKING:
    # the remediation component and the state stores (actions, node locks: a quarter of a cold
    # why-pending's modules) are imported by the commands that act or read the trail, not by
    # every diagnosis
    from bot.state.contracts import AuditLog, PendingStore


async def run_invocation(
    inv: Invocation,
    settings: Settings,
    *,
    scenario: str = "",
    deadline: float | None = None,
    progress: Progress = no_progress,
    clients: KubeClients | None = None,
    started: float | None = None,
) -> Report:
    """Run against the configured cluster, or a fresh simulator of ``scenario``; ``deadline``
    (``time.monotonic()``) is when the answer is due (default: the command's deadline from now);
    ``progress`` is told what is being done (the CLI's progress line); ``clients``: the
    configured cluster's, already being built (``bot.cli``); ``started``: when the asker began to
    wait (``Service.run``; a scenario's simulator starts after it, and is not counted).

    With a scenario, the time the simulator takes to start (imports, keys, servers) moves the deadline
    on: it stands in for a cluster that would already be running, so it is not the cluster's time.
    """
    if scenario:
        starting = time.monotonic()
        from bot.sim.cluster import SimCluster

        progress(f"starting a simulated cluster of {scenario}")
        async with SimCluster.from_file(scenario) as sim:
            if deadline is not None:
                deadline += time.monotonic() - starting
            sim_settings = sim.settings(
                runbook_dir=settings.runbook_dir, strict_checks=settings.strict_checks, node_access=settings.node_access
            )
            service = Service(sim_settings)
            try:
                return await service.run(replace(inv, cluster=""), deadline=deadline, progress=progress)
            finally:
                await service.close()
    service = Service(settings, clients=clients)
    try:
        return await service.run(inv, deadline=deadline, progress=progress, started=started)
    finally:
        await service.close()


def shared_remediation_state(settings: Settings, clients: KubeClients) -> tuple[PendingStore, AuditLog] | None:
    """The replicas' store and audit trail on the API with ``state: kubernetes``; None: the state file
    (the service opens it)."""
    from bot.state.opening import open_state, state_on_cluster

    if not state_on_cluster(settings):
        return None
    return open_state(settings, clients).actions()


def run_audit(settings: Settings, *, since: str, as_json: bool, limit: int) -> int:
    """``gpubot audit``: the state file's trail, or with ``state: kubernetes`` the shared one.

    A run the trail shows as still running whose process stopped renewing it is restored and
    recorded ``interrupted`` first (this needs the cluster; without it the trail is still printed).
    """
    from bot.remediation.service import RemediationService
    from bot.remediation.terminal import print_audit, recover_abandoned, running_records
    from bot.state.opening import state_on_cluster

    if not state_on_cluster(settings) and not running_records(None, settings):
        return print_audit(settings, since=since, as_json=as_json, limit=limit)

    async def read() -> int:
        notes: list[str] = []
        try:
            clients = KubeClients(settings)
        except GpubotError as exc:
            if state_on_cluster(settings):
                raise
            # the trail is still worth printing; what could not be restored is said first
            notes = [f"could not restore the runs still marked running: {exc.user_message}"]
            return await asyncio.to_thread(
                partial(print_audit, notes=notes), settings, since=since, as_json=as_json, limit=limit
            )
        try:
            shared = shared_remediation_state(settings, clients)
            try:
                if await asyncio.to_thread(running_records, shared, settings):
                    notes = await recover_abandoned(RemediationService(settings, clients, state=shared))
            except GpubotError as exc:
                notes = [f"could not restore the runs still marked running: {exc.user_message}"]
            audit = shared[1] if shared else None
            show = partial(print_audit, notes=notes)
            return await asyncio.to_thread(show, settings, since=since, as_json=as_json, limit=limit, audit=audit)
        finally:
            await clients.close()

    return asyncio.run(read())


def run_act(
    settings: Settings,
    action: str,
    params: Mapping[str, str],
    *,
    dry_run: bool,
    assume_yes: bool,
    scenario: str = "",
) -> int:
    """``gpubot act`` from the command line; ``scenario`` runs it on a fresh simulator of that file."""
    from bot.remediation.terminal import cli_act, os_actor

    actor = os_actor()

    def read_line(prompt: str) -> str:
        try:
            return input(prompt)
        except EOFError:
            return ""

    async def act(on: Settings) -> int:
        clients = KubeClients(on)
        try:
            return await cli_act(on, clients, action, params, actor=actor, dry_run=dry_run,
                                 assume_yes=assume_yes, read_line=read_line, write=print,
                                 state=shared_remediation_state(on, clients))
        finally:
            await clients.close()

    async def go() -> int:
        async with stopped_by_signals() as got:
            try:
                return await on_cluster()
            except asyncio.CancelledError:
                if not got:
                    raise
        # the run stopped at its step, restored the node and recorded "cancelled" (as for Ctrl-C)
        print(f"gpubot: stopped by {got[0].name}; the action was cancelled and what it changed restored "
              "(see gpubot audit)", file=sys.stderr)
        return 128 + int(got[0])

    async def on_cluster() -> int:
        if not scenario:
            return await act(settings)
        from bot.sim.cluster import SimCluster

        # acting needs the remediation component: the simulator installs it (actuator pods)
        async with SimCluster.from_file(scenario, remediation=True) as sim:
            return await act(sim.settings(
                state_path=settings.state_path, dry_run=settings.dry_run, runbook_dir=settings.runbook_dir,
                node_ready_timeout_s=settings.node_ready_timeout_s, action_ttl_s=settings.action_ttl_s,
                node_access=settings.node_access,
            ))

    return asyncio.run(go())


@contextlib.asynccontextmanager
async def stopped_by_signals() -> AsyncIterator[list[signal.Signals]]:
    """SIGTERM and SIGHUP (a closed terminal, ``kill``) stop a run as Ctrl-C does: they cancel
    the running task, so an action stops at its step, restores what it changed and records it;
    the signals received are listed in what this yields."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    got: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        got.append(sig)
        if task is not None:
            task.cancel()

    handled = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, stop, sig)
            handled.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal
            pass
    try:
        yield got
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
