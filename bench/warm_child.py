"""The long-running bot's warm why-pending, in a fresh process of its own.

``python -m bench.warm_child INFO_JSON SIM_PID NAMESPACE POD RUNS``: imports what ``gpubot serve`` imports
(the Slack transport and the wiring included), builds the ``Service`` as ``bot.wiring`` builds it
(watch-fed cache, kept SSH connections), waits for the cache to sync, times ``RUNS`` why-pendings
after one warm-up and prints one JSON line: the timings, the API requests per run and this
process's RSS.

Why a child process: the RSS target is the serving process's memory. Measured inside the benchmark
harness, the figure also carried whatever earlier sizes and the object-size survey had left in the
harness's heap (``rss_before_mb`` was 219 MB there before the service existed).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import SimProc, median
from bot import event_loop
from bot.cli import tune_gc
from bot.commands import parse_invocation
from bot.engine.gather import LOADERS
from bot.server import freeze_startup_heap, set_switch_interval  # what serve imports, and its set-up
from bot.service import Service


def time_physical_probe() -> list[float]:
    """Record how long each run spends reading the nodes (bench-only wrapper around the loader),
    so the table can show the API/cache part apart from the physical reads."""
    loader = LOADERS["node_readings"]
    spent: list[float] = []
    inner = loader.fn

    async def timed(facts: Any, sources: Any) -> None:
        t = time.perf_counter()
        try:
            await inner(facts, sources)
        finally:
            spent.append(time.perf_counter() - t)

    LOADERS["node_readings"] = dataclasses.replace(loader, fn=timed)
    return spent


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB, from /proc/self/status."""
    now = peak = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            now = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return now, peak


async def warm(sim: SimProc, namespace: str, pod: str, runs: int) -> dict[str, Any]:
    rss_before, _ = rss_mb()
    service = Service(sim.settings(), use_cache=True, keep_connections=True)
    cluster = sim.info["cluster"]["name"]
    cache = service.clients.cache_for(cluster)
    assert cache is not None
    t0 = time.perf_counter()
    if not await cache.wait_ready(300):
        raise RuntimeError("cache did not sync")
    sync_s = time.perf_counter() - t0
    freeze_startup_heap()  # what serve does after its start-up: keep the cache out of GC scans
    set_switch_interval()  # and serve's GIL switch interval
    tune_gc()  # and the collector's thresholds, as gpubot's main() sets them for every command
    inv = parse_invocation(["why-pending", pod, "-n", namespace])
    reader = service.clients.reads_for(cluster)
    await service.run(inv)  # first run opens the SSH connections
    ssh_spent = time_physical_probe()
    walls, reqs, nbytes = [], [], []
    cpu0 = sim.cpu_s()
    codes: set[str] = set()
    for _ in range(runs):
        r0, b0 = reader.stats.requests, reader.stats.bytes_received
        t = time.perf_counter()
        report = await service.run(inv)
        walls.append(time.perf_counter() - t)
        reqs.append(reader.stats.requests - r0)
        nbytes.append(reader.stats.bytes_received - b0)
        codes = {f.code for f in report.findings}
    sim_cpu = sim.cpu_s() - cpu0
    rss_now, rss_peak = rss_mb()
    pods_cached = len(cache.stores["Pod"].objects)
    await service.close()
    return {
        "sync_s": sync_s,
        "sync_requests": cache.stats.requests,
        "wall_s": median(walls),
        "wall_max_s": max(walls),
        "ssh_probe_s": median(ssh_spent),
        "wall_without_ssh_s": median([w - s for w, s in zip(walls, ssh_spent, strict=True)]),
        "requests": max(reqs),
        "bytes": int(median(nbytes)),
        "rss_mb": rss_now,
        "rss_peak_mb": rss_peak,
        "rss_before_mb": rss_before,
        "pods_cached": pods_cached,
        "sim_share": sim_cpu / sum(walls),
        "codes": sorted(codes),
    }


def main(info_path: str, sim_pid: str, namespace: str, pod: str, runs: str) -> None:
    info = json.loads(Path(info_path).read_text())
    sim = SimProc(int(sim_pid), info, Path(info_path).parent)
    print(json.dumps(event_loop.run(warm(sim, namespace, pod, int(runs)))), flush=True)  # serve's loop


if __name__ == "__main__":
    main(*sys.argv[1:6])
