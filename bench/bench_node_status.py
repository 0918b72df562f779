"""node-status over 50 and 500 GPU nodes via SSH, one of them silent (accepts, never answers).

Compares the wall time of ``Service.run(node-status)`` with the lower bound
``ceil(nodes / concurrency) × per-node round trip`` (the round trip measured on one healthy
node: connect, authenticate, every read command) and with the budget
``1.5 × lower bound + deadline`` (the silent node costs one deadline, in parallel with the rest).
The SSH deadline is set short (2 s) for the benchmark; the simulated nodes add ``latency_ms`` to
every command, standing in for network and the command's own run time.

``python -m bench.bench_node_status [--sizes 50,500] [--runs N] [--latency-ms 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from typing import Any

from bench.common import SimProc, emit, median, sim_process, table
from bot.commands import parse_invocation
from bot.probes.node import observe_nodes, ssh_target_for
from bot.service import Service

DEADLINE_S = 2.0


async def round_trip(sim: SimProc, samples: int = 5) -> float:
    settings = sim.settings(ssh_deadline_s=DEADLINE_S)
    cluster = settings.clusters[0]
    node = "gpu-00000"
    target = ssh_target_for(
        node,
        None,
        user=settings.ssh_user,
        key_path=cluster.ssh_key_path,
        known_hosts=cluster.ssh_known_hosts,
        overrides=cluster.ssh_targets,
    )
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        result = await observe_nodes({node: target}, concurrency=1, deadline=DEADLINE_S)
        times.append(time.perf_counter() - t)
        assert not isinstance(result[node], Exception), result[node]
    return median(times)


async def measure(sim: SimProc, nodes: int, runs: int) -> dict[str, Any]:
    rtt = await round_trip(sim)
    settings = sim.settings(ssh_deadline_s=DEADLINE_S)
    service = Service(settings)
    inv = parse_invocation(["node-status"])
    t = time.perf_counter()
    await service.run(inv)  # first run: imports, key and known_hosts loading, API client warm-up
    first = time.perf_counter() - t
    walls, unreachable = [], 0
    cpu0, own0 = sim.cpu_s(), time.process_time()
    for _ in range(runs):
        t = time.perf_counter()
        report = await service.run(inv)
        walls.append(time.perf_counter() - t)
        unreachable = len([s for s in report.skipped if s.why.startswith("ssh")])
    sim_cpu, own_cpu = sim.cpu_s() - cpu0, time.process_time() - own0
    await service.close()
    concurrency = settings.ssh_concurrency
    lower = math.ceil(nodes / concurrency) * rtt
    budget = 1.5 * lower + DEADLINE_S
    wall = median(walls)
    return {
        "nodes": nodes,
        "concurrency": concurrency,
        "deadline_s": DEADLINE_S,
        "round_trip_s": rtt,
        "lower_bound_s": lower,
        "budget_s": budget,
        "wall_s": wall,
        "first_run_s": first,
        "vs_lower_bound": wall / lower,
        "met": wall <= budget,
        "silent_reported": unreachable,
        "sim_share": sim_cpu / sum(walls),
        "bot_cpu_s": own_cpu / runs,
        "sim_cpu_s": sim_cpu / runs,
        "runs": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50,500")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency-ms", type=int, default=20)
    args = ap.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        spec = f"nodes={size},gpu_nodes={size},pods={size * 4},seed=1,silent_nodes=1,latency_ms={args.latency_ms}"
        with sim_process(spec) as sim:
            results.append({**asyncio.run(measure(sim, size, args.runs)), "latency_ms": args.latency_ms})
    rows = [
        [
            r["nodes"],
            r["concurrency"],
            r["round_trip_s"],
            r["lower_bound_s"],
            r["wall_s"],
            r["first_run_s"],
            f"{r['vs_lower_bound']:.2f}x",
            r["budget_s"],
            "met" if r["met"] else "missed",
            r["silent_reported"],
            f"{r['sim_share']:.0%}",
            f"{r['bot_cpu_s']:.2f}+{r['sim_cpu_s']:.2f}",
        ]
        for r in results
    ]
    headers = [
        "GPU nodes",
        "concurrency",
        "round trip s",
        "lower bound s",
        "wall s",
        "first run s",
        "wall/lower",
        "1.5xLB+deadline s",
        "target",
        "unreachable reported",
        "sim CPU share",
        "CPU s bot+sim",
    ]
    emit("node_status", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
