"""``gpubot serve``: the long-running Slack bot, from settings to graceful shutdown.

Order matters: check the configuration (fail fast, naming what is missing but never a value),
turn on JSON logs that redact every secret, build the bot (``bot.wiring``), verify the bot token,
restore runs a restart cut off, start the transports, freeze the start-up heap out of the
collector's scans, seek leadership (``bot.state.leadership``; with SQLite state this process always leads)
and, only while leading, run the periodic sweep (expired offers, abandoned runs, expired keys)
and one sweep per enabled watch (``bot.proactive``), then wait for SIGTERM/SIGINT, stop the
sweeps, give the leader Lease up (another replica leads while this one drains) and drain:
in-flight diagnoses within ``shutdown_grace_s``, a running action up to its own maximum. This
module runs what ``bot.wiring`` builds; it holds no Slack, diagnosis or remediation logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Awaitable, Callable

from bot import dataclass_code
from bot.event_loop import running_loop_name
from bot.observability import configure_logging, log_event
from bot.remediation import ClusterClients
from bot.settings import Settings
from bot.slack.hooks import DiagnosisService
from bot.slack.transport import SlackServer, check_slack_settings
from bot.wiring import Bot, build_bot

log = logging.getLogger("gpubot.server")


async def serve(
    settings: Settings,
    *,
    service: DiagnosisService | None = None,
    clients: ClusterClients | None = None,
    stop: asyncio.Event | None = None,
    started: asyncio.Future[SlackServer] | None = None,
    configure_logs: bool = True,
) -> None:
    """Run the bot until SIGTERM/SIGINT (or ``stop`` is set).

    ``service`` and ``clients`` replace the diagnosis service and the cluster clients (tests; see
    ``bot.wiring.build_bot``). ``started`` (tests) receives the running server, e.g. to learn the
    bound port. Raises ``ConfigError`` on bad settings.
    """
    check_slack_settings(settings)
    if configure_logs:
        configure_logging(
            settings.log_level,
            secrets=[
                settings.slack_bot_token,
                settings.slack_app_token,
                settings.slack_signing_secret,
                settings.alerts_token,
            ],
        )
    bot = build_bot(settings, service=service, clients=clients)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    sweepers: list[asyncio.Task[None]] = []
    leader_stop = asyncio.Event()
    leadership: asyncio.Task[None] | None = None
    switch_interval = set_switch_interval()
    try:
        await bot.start()
        freeze_startup_heap()
        log_event(log, "serving", event_loop=running_loop_name())
        # every replica answers commands and clicks; the singletons run only in the leader
        leadership = asyncio.create_task(bot.leader.run(leader_stop))
        for factory in singletons(bot, stop):
            sweepers.append(asyncio.create_task(bot.leader.run_while_leader(factory)))
        if started is not None and not started.done():
            started.set_result(bot.server)
        await stop.wait()
        # singletons first, then the Lease: another replica leads while this one drains
        await stop_leading(sweepers, leadership, leader_stop, settings.api_timeout_s)
        log_event(log, "shutting down", in_flight=len(bot.slack.tasks), grace_s=settings.shutdown_grace_s)
        await bot.server.stop(settings.shutdown_grace_s)
    finally:
        await stop_leading(sweepers, leadership, leader_stop, settings.api_timeout_s)
        for sig in installed:
            loop.remove_signal_handler(sig)
        sys.setswitchinterval(switch_interval)  # an embedding process (tests) gets its own back
        await bot.close()


async def stop_leading(
    sweepers: list[asyncio.Task[None]],
    leadership: asyncio.Task[None] | None,
    leader_stop: asyncio.Event,
    timeout_s: float,
) -> None:
    """Cancel the singletons, then let the leadership loop give the Lease up (idempotent)."""
    for sweeper in sweepers:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
    if leadership is not None:
        leader_stop.set()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(leadership, timeout_s)


def singletons(bot: Bot, stop: asyncio.Event) -> list[Callable[[], Awaitable[None]]]:
    """What only the leader runs: the offer sweep (with the leader's housekeeping) and each watch."""
    factories: list[Callable[[], Awaitable[None]]] = []
    if bot.remediation is not None:
        remediation_sweep = bot.remediation.sweep
        housekeeping = bot.sweeps

        async def sweep() -> None:
            await remediation_sweep()
            for extra in housekeeping:
                await extra()

        factories.append(lambda: sweep_periodically(sweep, bot.settings.offer_sweep_interval_s, stop))
    for watcher in bot.watchers:
        for job, interval_s, what in watcher.loops():
            factories.append(
                lambda j=job, i=interval_s, w=what: sweep_periodically(j, i, stop, what=w)  # type: ignore[misc]
            )
    return factories


#: serve's GIL switch interval (CPython's default is 5 ms): how long a worker thread (checks, JSON
#: decoding, rendering) may hold the interpreter before the event loop thread, and with it every
#: Slack ack, gets a turn (measured: bench/bench_slack_ack.py --switch-interval)
SWITCH_INTERVAL_S = 0.001


def set_switch_interval(seconds: float = SWITCH_INTERVAL_S) -> float:
    """Set the interpreter's thread switch interval; returns the previous one (to restore)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    return previous


def freeze_startup_heap() -> None:
    """Keep what start-up built out of the garbage collector's full scans.

    Modules, the Kubernetes client's model classes and the warm cache live as long as the
    process; left in the collector's oldest generation, every full collection walks them all and
    stops the event loop for ~100 ms, which a big answer (a pod with 20,000 events) triggers.
    Frozen, a full collection walks only what was allocated since (measured: bench/bench_loop.py).
    The generated dataclass methods' texts kept for the start-up are let go first.
    """
    dataclass_code.release()
    gc.collect()
    gc.freeze()


async def sweep_periodically(
    sweep: Callable[[], Awaitable[object]], interval_s: float, stop: asyncio.Event, *, what: str = "offer sweep"
) -> None:
    """Call ``sweep`` every ``interval_s`` until ``stop`` is set; a failed sweep is logged, and
    the next one tries again (an expiry or a problem missed now is caught up then)."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
        if stop.is_set():
            return
        try:
            await sweep()
        except Exception:
            log.exception("%s failed", what)
