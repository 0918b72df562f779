"""The watch's sweep over 1,000 GPU nodes: wall time against the node-status budget, and memory.

A generated cluster (one node silent: it accepts SSH and never answers) runs in its own process
(``bench.simproc``). The real diagnosis service as ``serve`` builds it (watch-fed cache, kept SSH
connections) and a ``Watcher`` with its SQLite problem store sweep it several times; a counting
notifier stands in for Slack, so the figures are the sweep's own (the Slack side is one call per
new or changed problem). Printed per size: the first sweep (posts what it finds) and the steady
sweeps after it (must post nothing), split into the fleet's node-status and the watcher's own
work, with the CPU of bot and simulator, against the budget of ``bench.bench_node_status``
(``1.5 × ceil(nodes / concurrency) × round trip + deadline``); the Python heap peak of one more
steady sweep traced apart (tracing slows a sweep severalfold, so no wall time is taken under
it), the process's peak RSS after each steady sweep and after the traced one (tracemalloc's own
tables count there), the cost of one watch-stream poll of the cache, and the machine's load (this
box is shared). The target is met when the steady sweep is within the budget and memory is
bounded: the peak RSS grows by at most ``RSS_GROWTH_LIMIT_MB`` from the first steady sweep to
the last (a sweep that kept what it read, 1,000 nodes' readings, would add more every time).

``python -m bench.bench_watch_sweep [--sizes 1000] [--runs 3] [--latency-ms 20]``
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
import tracemalloc
from datetime import datetime
from typing import Any

from bench.bench_node_status import DEADLINE_S, round_trip
from bench.common import RSS_GROWTH_LIMIT_MB, SimProc, emit, median, rss_text, sim_process, table
from bot import event_loop
from bot.commands import Invocation
from bot.proactive import Problem, Watcher
from bot.proactive.stream import NodeStream
from bot.probes.cache import WatchCache
from bot.report import Report
from bot.service import Service
from bot.settings import WatchConfig
from bot.state.opening import open_sqlite


class CountingNotifier:
    """Counts what the watch would post; posts nothing."""

    def __init__(self) -> None:
        self.posts = 0
        self.edits = 0

    async def post_open(
        self, channel: str, problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = ""
    ) -> str:
        self.posts += 1
        return f"1700000000.{self.posts:06d}"

    async def update_open(
        self,
        channel: str,
        ts: str,
        before: Problem,
        after: Problem,
        *,
        opened_at: datetime,
        seen_at: datetime,
        owner: str = "",
    ) -> None:
        self.edits += 1

    async def resolve(
        self, channel: str, ts: str, problem: Problem, *, opened_at: datetime, resolved_at: datetime
    ) -> None:
        self.edits += 1

    async def post_summary(self, channel: str, held: list[Problem], *, limit: int, window_start: datetime) -> str:
        self.posts += 1
        return "1700000001.000000"

    async def find_summary(self, channel: str, *, window_start: datetime) -> str | None:
        return None

    async def find_posted(self, channel: str, fingerprint: str, *, opened_at: datetime) -> str | None:
        return None

    async def update_summary(self, channel: str, ts: str, held: list[Problem], *, limit: int) -> None:
        self.edits += 1


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class TimedService:
    """The real diagnosis service, timed: how much of a sweep is the fleet's node-status."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.diagnosis_s = 0.0

    async def run(self, inv: Invocation) -> Report:
        t = time.perf_counter()
        try:
            return await self.service.run(inv)
        finally:
            self.diagnosis_s += time.perf_counter() - t


async def _timed_sweep(watcher: Watcher, timed: TimedService, sim: SimProc) -> dict[str, float]:
    """One sweep: wall, the node-status part of it, the watcher's own part, CPU of bot and sim."""
    timed.diagnosis_s = 0.0
    cpu0, sim0 = time.process_time(), sim.cpu_s()
    t = time.perf_counter()
    result = await watcher.sweep()
    wall = time.perf_counter() - t
    return {
        "wall_s": wall,
        "node_status_s": timed.diagnosis_s,
        "watcher_s": wall - timed.diagnosis_s,
        "bot_cpu_s": time.process_time() - cpu0,
        "sim_cpu_s": sim.cpu_s() - sim0,
        "posted": float(len(result.posted)),
    }


async def _stream_polls(cache: WatchCache, polls: int = 20) -> tuple[float, float]:
    """The watch-stream trigger's cost every ``stream_poll_s``: its first poll (learns every GPU
    node) and the median of later ones (nothing changed: a resourceVersion comparison per node)."""
    stream = NodeStream()
    times = []
    for _ in range(polls + 1):
        t = time.perf_counter()
        await stream.poll(cache)
        times.append((time.perf_counter() - t) * 1000)
    return times[0], median(times[1:])


async def measure(sim: SimProc, nodes: int, runs: int) -> dict[str, Any]:
    rtt = await round_trip(sim)
    settings = sim.settings(ssh_deadline_s=DEADLINE_S)
    # as ``serve`` builds it: reads from the watch-fed cache, SSH connections kept between sweeps
    service = Service(settings, use_cache=True, keep_connections=True)
    cache = service.clients.cache_for(settings.clusters[0].name)
    assert cache is not None and await cache.wait_ready(120), "the watch-fed cache did not sync"
    timed = TimedService(service)
    notifier = CountingNotifier()
    cfg = WatchConfig(cluster=settings.clusters[0].name, channel="C0BENCH", enabled=True)
    watcher = Watcher(cfg, timed, open_sqlite(sim.workdir / "watch.db").problems, notifier, posts_per_hour=10**6)
    first = await _timed_sweep(watcher, timed, sim)
    first_posts = notifier.posts
    steady, rss = [], []
    for _ in range(runs):
        steady.append(await _timed_sweep(watcher, timed, sim))
        rss.append(_rss_mb())
    # the Python heap of one more steady sweep, traced apart: tracing slows a sweep severalfold,
    # so no wall time above is taken under it
    tracemalloc.start()
    await watcher.sweep()
    heap_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    traced_rss = _rss_mb()
    stream_first_ms, stream_ms = await _stream_polls(cache)
    await service.close()
    lower = math.ceil(nodes / settings.ssh_concurrency) * rtt
    budget = 1.5 * lower + DEADLINE_S
    wall = median([s["wall_s"] for s in steady])
    growth = rss[-1] - rss[0]
    bounded = growth <= RSS_GROWTH_LIMIT_MB
    return {
        "nodes": nodes,
        "round_trip_s": rtt,
        "budget_s": budget,
        "first_sweep_s": first["wall_s"],
        "first_posts": first_posts,
        "steady_sweep_s": wall,
        "steady_node_status_s": median([s["node_status_s"] for s in steady]),
        "steady_watcher_s": median([s["watcher_s"] for s in steady]),
        "steady_bot_cpu_s": median([s["bot_cpu_s"] for s in steady]),
        "steady_sim_cpu_s": median([s["sim_cpu_s"] for s in steady]),
        "steady_posts": notifier.posts - first_posts,
        "met": wall <= budget and bounded,
        "within_budget": wall <= budget,
        "memory_bounded": bounded,
        "rss_growth_mb": growth,
        "traced_rss_mb": traced_rss,
        "heap_peak_mb": heap_peak,
        "stream_first_poll_ms": stream_first_ms,
        "stream_poll_ms": stream_ms,
        "rss_mb_by_sweep": rss,
        "load_avg_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "runs": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency-ms", type=int, default=20)
    args = ap.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        spec = f"nodes={size},gpu_nodes={size},pods={size * 4},seed=1,silent_nodes=1,latency_ms={args.latency_ms}"
        with sim_process(spec) as sim:
            # the sweep runs in serve, on serve's loop
            results.append({**event_loop.run(measure(sim, size, args.runs)), "latency_ms": args.latency_ms})
    rows = [
        [
            r["nodes"],
            r["round_trip_s"],
            r["budget_s"],
            r["first_sweep_s"],
            r["first_posts"],
            r["steady_sweep_s"],
            r["steady_node_status_s"],
            r["steady_watcher_s"],
            f"{r['steady_bot_cpu_s']:.2f}+{r['steady_sim_cpu_s']:.2f}",
            r["steady_posts"],
            "met" if r["met"] else "missed",
            r["heap_peak_mb"],
            rss_text(r),
            f"{r['stream_first_poll_ms']:.1f} / {r['stream_poll_ms']:.2f}",
            f"{r['load_avg_1m']:.1f} on {r['cpus']} CPUs",
        ]
        for r in results
    ]
    headers = [
        "GPU nodes",
        "round trip s",
        "budget s",
        "first sweep s",
        "first posts",
        "steady sweep s",
        "of it node-status s",
        "of it watcher s",
        "CPU s bot+sim",
        "steady posts",
        "target",
        "heap peak MiB",
        "peak RSS MiB by steady sweep (traced)",
        "stream poll ms first / steady",
        "load during run",
    ]
    emit("watch_sweep", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
