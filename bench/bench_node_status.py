"""node-status over 500 GPU nodes, through SSH and through the node agent, at the default deadline.

The honest lower bound of a fan-out is ``ceil(nodes / concurrency) × one node's round trip``,
where the round trip is what one node costs at the least: connect (SSH: TCP, key exchange,
authentication; agent: the exec's websocket upgrade) plus ONE command, the combined allow-listed
read (``bot.probes.ssh.COMBINED_READ``) that the probe now sends. It is measured alone on one
healthy node (median of ``ROUND_TRIP_SAMPLES``). The target: the whole ``node-status`` (API reads, the fan-out,
every check, the report) within 1.5× that bound, on a fleet of healthy nodes. A second run per
transport has one silent node (accepts, never answers): it costs one deadline in parallel, so
its budget is that deadline plus 1.5× the bound. The deadline is the default of the settings
(``ssh_deadline_s``); the simulated nodes add ``latency_ms`` to every command, over SSH and
through the agent alike, standing in for network and the command's own run time. The service is
built as ``gpubot serve`` builds it, with the watch-fed cache and kept SSH connections, and the
process set up as serve sets it up (the synced heap frozen, serve's GIL switch interval, the
collector's thresholds of every gpubot command)
(``--fresh``: none of that, the one-shot CLI's case); the first run opens the connections and is
reported apart. The load average is printed with each
row: this machine is shared.

``python -m bench.bench_node_status [--sizes 500] [--runs N] [--latency-ms 20] [--transports ssh,agent]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import sys
import time
from contextlib import nullcontext
from typing import Any

from bench.common import SimProc, emit, median, sim_process, table
from bench.warm_child import time_physical_probe
from bot import event_loop
from bot.cli import tune_gc
from bot.commands import parse_invocation
from bot.probes.node import ssh_target_for
from bot.probes.node_agent import AGENT_CONTAINER, AGENT_NAME
from bot.probes.ssh import COMBINED_READ, READ_COMMANDS, open_connection, run_command
from bot.server import freeze_startup_heap, set_switch_interval
from bot.service import Service
from bot.settings import Settings
from bot.sim.agents import AGENT_NAMESPACE

NODE = "gpu-00000"
#: the short deadline ``bench.bench_watch_sweep`` sweeps with (this benchmark uses the default)
DEADLINE_S = 2.0
#: single-node round trips whose median is the bound's round trip: with five, one run's bound came
#: out a tenth below the others' (27.8 ms against 31-32 ms) and moved the ratio by as much
ROUND_TRIP_SAMPLES = 15


async def ssh_round_trip(settings: Settings) -> float:
    """Connect, authenticate, run the combined read, close: one node's least cost over SSH."""
    cluster = settings.clusters[0]
    target = ssh_target_for(
        NODE,
        None,
        user=settings.ssh_user,
        key_path=cluster.ssh_key_path,
        known_hosts=cluster.ssh_known_hosts,
        overrides=cluster.ssh_targets,
    )
    t = time.perf_counter()
    conn = await open_connection(target, timeout=settings.ssh_deadline_s)
    async with conn:
        result = await run_command(
            conn, COMBINED_READ, allowed=READ_COMMANDS, node=NODE, timeout=settings.ssh_deadline_s
        )
    assert result.exit_status == 0, result.stderr
    return time.perf_counter() - t


async def round_trip(sim: SimProc, samples: int = 5) -> float:
    """The median SSH round trip of one node (for ``bench.bench_watch_sweep``'s budget)."""
    settings = sim.settings(ssh_deadline_s=DEADLINE_S)
    return median([await ssh_round_trip(settings) for _ in range(samples)])


async def agent_round_trip(service: Service, settings: Settings) -> float:
    """One exec of the combined read into the node's agent pod: the agent transport's least cost."""
    clients = service.clients.for_cluster(settings.clusters[0].name)
    assert clients.exec is not None
    pod = f"{AGENT_NAME}-{NODE}"[:63].rstrip("-.")
    t = time.perf_counter()
    result = await clients.exec.run_read(
        AGENT_NAMESPACE, pod, AGENT_CONTAINER, COMBINED_READ, timeout=settings.ssh_deadline_s
    )
    assert result.exit_status == 0, result.stderr
    return time.perf_counter() - t


async def measure(
    sim: SimProc, nodes: int, runs: int, transport: str, silent: bool, *, keep: bool = True
) -> dict[str, Any]:
    settings = sim.settings(node_access=transport, namespace=AGENT_NAMESPACE)
    # as ``gpubot serve`` builds it: the watch-fed cache, SSH connections kept between runs (the
    # first run opens them); ``keep`` False is the one-shot CLI: fresh reads, fresh connections
    service = Service(settings, use_cache=keep, keep_connections=keep)
    if keep:
        cache = service.clients.cache_for(settings.clusters[0].name)
        assert cache is not None and await cache.wait_ready(120), "the watch-fed cache did not sync"
        # and as serve sets its process up after start-up: the synced heap out of the collector's
        # scans, the event loop's share of the GIL
        freeze_startup_heap()
        tune_gc()  # gpubot's main() sets the collector so for every command, serve included
        previous_switch = set_switch_interval()
    inv = parse_invocation(["node-status"])
    t = time.perf_counter()
    await service.run(inv)  # first run: key and known_hosts loading, API client warm-up
    first = time.perf_counter() - t
    samples = []
    for _ in range(ROUND_TRIP_SAMPLES):
        samples.append(await (ssh_round_trip(settings) if transport == "ssh" else agent_round_trip(service, settings)))
    rtt = median(samples)
    probe = time_physical_probe()
    walls, unreachable = [], 0
    cpu0, own0 = sim.cpu_s(), time.process_time()
    for _ in range(runs):
        t = time.perf_counter()
        report = await service.run(inv)
        walls.append(time.perf_counter() - t)
        unreachable = len([s for s in report.skipped if "timeout" in s.why or "answer" in s.why])
        del report  # answered: a served bot keeps no answer while it works out the next one
    sim_cpu, own_cpu = sim.cpu_s() - cpu0, time.process_time() - own0
    await service.close()
    if keep:
        sys.setswitchinterval(previous_switch)
        gc.unfreeze()
    concurrency = settings.ssh_concurrency
    bound = math.ceil(nodes / concurrency) * rtt
    deadline = settings.ssh_deadline_s
    budget = 1.5 * bound + (deadline if silent else 0.0)
    wall = median(walls)
    return {
        "transport": transport,
        "kept_connections": keep,
        "nodes": nodes,
        "silent_nodes": int(silent),
        "concurrency": concurrency,
        "deadline_s": deadline,
        "round_trip_s": rtt,
        "bound_s": bound,
        "budget_s": budget,
        "wall_s": wall,
        "first_run_s": first,
        "vs_bound": wall / bound,
        "probe_s": median(probe),
        "probe_vs_bound": median(probe) / bound,
        "met": wall <= budget,
        "silent_reported": unreachable,
        "bot_cpu_s": own_cpu / runs,
        "sim_cpu_s": sim_cpu / runs,
        "runs": runs,
        "load_avg": os.getloadavg()[0],
    }


def _core_layouts(args: argparse.Namespace, silent: bool) -> tuple[bool, ...]:
    """Whether each measurement of a row runs with the simulator's and the bot's cores apart: the
    verdict's own first, then (``--also-shared``, rows without a silent node) a shared-cores one
    for comparison."""
    if args.shared_cores:
        return (False,)
    return (True, False) if args.also_shared and not silent else (True,)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--transports", default="ssh,agent")
    ap.add_argument("--no-silent", action="store_true", help="skip the runs with one silent node")
    ap.add_argument("--fresh", action="store_true", help="no cache, no kept SSH connections (the one-shot CLI's case)")
    ap.add_argument("--shared-cores", action="store_true",
                    help="leave the simulator and the bot to the scheduler (see SimProc.cores_apart)")
    ap.add_argument("--also-shared", action="store_true",
                    help="measure the runs without a silent node with shared cores too (reported, no verdict)")
    args = ap.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        for silent in (False,) if args.no_silent else (False, True):
            spec = (
                f"nodes={size},gpu_nodes={size},pods={size * 4},seed=1,silent_nodes={int(silent)},"
                f"latency_ms={args.latency_ms},realistic=1"
            )
            with sim_process(spec) as sim:
                for transport in args.transports.split(","):
                    for apart in _core_layouts(args, silent):
                        with sim.cores_apart() if apart else nullcontext("shared") as cores:
                            coro = measure(sim, size, args.runs, transport, silent, keep=not args.fresh)
                            # serve's loop as serve picks it (bot/event_loop.py); --fresh is the one-shot CLI's
                            r = asyncio.run(coro) if args.fresh else event_loop.run(coro)
                        results.append({**r, "latency_ms": args.latency_ms, "cores": cores,
                                        "comparison_only": not apart and not args.shared_cores})
    rows = [
        [
            r["transport"],
            r["nodes"],
            r["silent_nodes"],
            r["round_trip_s"],
            r["bound_s"],
            r["wall_s"],
            f"{r['vs_bound']:.2f}x",
            r["probe_s"],
            f"{r['probe_vs_bound']:.2f}x",
            r["budget_s"],
            "met" if r["met"] else "missed",
            f"{r['bot_cpu_s']:.2f}+{r['sim_cpu_s']:.2f}",
            r["cores"] + (" (comparison)" if r["comparison_only"] else ""),
            f"{r['load_avg']:.2f}",
        ]
        for r in results
    ]
    headers = [
        "via",
        "nodes",
        "silent",
        "round trip s",
        "bound s",
        "wall s",
        "wall/bound",
        "fan-out s",
        "fan-out/bound",
        "budget s",
        "target",
        "CPU s bot+sim",
        "cores",
        "load",
    ]
    emit("node_status", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
