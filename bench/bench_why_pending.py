"""why-pending at cluster scale: cold (one-shot CLI path) vs warm (watch-fed cache) vs kubectl.

For each size a generated cluster runs in its own process (``bench.simproc``). Cold: a fresh
process per run (``bench.cold_child``) runs ``Service.run`` with the paginated API reader, and
reports wall time, requests, bytes and its peak RSS. Warm: this process runs a ``Service`` with
``use_cache=True``, waits until the cache has synced, and times several runs. kubectl: the same
diagnosis by hand, run one after the other as an operator would. The simulator's CPU seconds
during each phase are read from /proc, so its own share of the time is reported.

``python -m bench.bench_why_pending [--sizes 200:40:5000,...] [--cold-runs N] [--warm-runs N]``
Only reads from the simulator it started.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from typing import Any

from bench.common import SimProc, emit, median, sim_process, table
from bot.commands import parse_invocation
from bot.engine.gather import LOADERS
from bot.probes.cache import WatchCache, _Reflector, _Store
from bot.probes.kube import ReadStats
from bot.service import Service
from bot.sim.generate import TARGET_NAMESPACE, TARGET_POD

DEFAULT_SIZES = "200:40:5000,2000:200:50000,5000:500:100000"
#: SSH deadline for the physical checks: short, so a benchmark run is never waiting on a timeout
SSH_DEADLINE_S = 2.0


def kubectl_procedure(kubeconfig: str) -> tuple[float, list[float], int]:
    """The runbook by hand: describe the pod, its events, the GPU nodes, every pod. Returns
    (total seconds, per-step seconds, bytes printed)."""
    steps = [
        ["describe", "pod", TARGET_POD, "-n", TARGET_NAMESPACE],
        ["get", "events", "-n", TARGET_NAMESPACE, f"--field-selector=involvedObject.name={TARGET_POD}"],
        ["describe", "nodes", "-l", "nvidia.com/gpu.product"],
        ["get", "pods", "-A", "-o", "wide"],
    ]
    kubectl = shutil.which("kubectl") or "kubectl"
    times, size = [], 0
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    for step in steps:
        t0 = time.perf_counter()
        out = subprocess.run([kubectl, *step], capture_output=True, env=env, check=True)
        times.append(time.perf_counter() - t0)
        size += len(out.stdout)
    return sum(times), times, size


def cold_once(sim: SimProc) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.cold_child", str(sim.workdir / "info.json"), TARGET_NAMESPACE, TARGET_POD],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


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


def pod_memory(cache: WatchCache) -> tuple[float, int]:
    """Bytes per cached pod: tracemalloc around a fresh slim pod store filled by one relist."""
    reflector = cache.reflectors["Pod"]
    store = _Store("Pod", threading.Lock())
    fresh = _Reflector(
        "Pod",
        reflector.list_fn,
        store,
        page_size=reflector.page_size,
        watch_timeout_s=60,
        stats=ReadStats(),
        clock=time.monotonic,
    )
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fresh._relist()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    n = len(store.objects)
    return held / max(n, 1), n


async def warm(sim: SimProc, runs: int, measure_memory: bool) -> dict[str, Any]:
    service = Service(sim.settings(ssh_deadline_s=SSH_DEADLINE_S), use_cache=True, keep_connections=True)
    cluster = sim.info["cluster"]["name"]
    cache = service.clients.cache_for(cluster)
    assert cache is not None
    t0 = time.perf_counter()
    if not await cache.wait_ready(300):
        raise RuntimeError("cache did not sync")
    sync_s = time.perf_counter() - t0
    gc.collect()
    gc.freeze()  # what a long-running bot would do after its initial sync: keep the cache out of GC scans
    inv = parse_invocation(["why-pending", TARGET_POD, "-n", TARGET_NAMESPACE])
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
    per_pod, npods = (0.0, 0)
    if measure_memory:
        per_pod, npods = await asyncio.to_thread(pod_memory, cache)
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
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sim_share": sim_cpu / sum(walls),
        "bytes_per_pod": per_pod,
        "memory_pods": npods,
        "codes": sorted(codes),
    }


def run_size(nodes: int, gpu: int, pods: int, cold_runs: int, warm_runs: int, kubectl_runs: int) -> dict[str, Any]:
    spec = f"nodes={nodes},gpu_nodes={gpu},pods={pods},seed=1"
    with sim_process(spec) as sim:
        colds = []
        cpu0 = sim.cpu_s()
        for _ in range(cold_runs):
            colds.append(cold_once(sim))
        cold_sim_cpu = sim.cpu_s() - cpu0
        cold_walls = [c["wall_s"] for c in colds]
        w = asyncio.run(warm(sim, warm_runs, measure_memory=pods <= 50_000))
        ktimes, ksteps = [], []
        for _ in range(kubectl_runs):
            total, steps, _size = kubectl_procedure(sim.kubeconfig)
            ktimes.append(total)
            ksteps = steps
        return {
            "nodes": nodes,
            "gpu_nodes": gpu,
            "pods": pods,
            "sim_generate_s": sim.info["generate_s"],
            "sim_load_s": sim.info["load_s"],
            "cold_wall_s": median(cold_walls),
            "cold_requests": colds[-1]["requests"],
            "cold_bytes": colds[-1]["bytes"],
            "cold_rss_mb": max(c["maxrss_mb"] for c in colds),
            "cold_sim_share": cold_sim_cpu / sum(cold_walls),
            "cold_codes": colds[-1]["codes"],
            **{f"warm_{k}": v for k, v in w.items()},
            "kubectl_s": median(ktimes),
            "kubectl_steps_s": ksteps,
            "ratio_cold": median(cold_walls) / median(ktimes),
            "ratio_warm": w["wall_s"] / median(ktimes),
            "runs": {"cold": cold_runs, "warm": warm_runs, "kubectl": kubectl_runs},
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="nodes:gpu_nodes:pods,...")
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--warm-runs", type=int, default=7)
    ap.add_argument("--kubectl-runs", type=int, default=1)
    args = ap.parse_args()
    results = []
    for size in args.sizes.split(","):
        nodes, gpu, pods = (int(x) for x in size.split(":"))
        results.append(run_size(nodes, gpu, pods, args.cold_runs, args.warm_runs, args.kubectl_runs))
    rows = [
        [
            f"{r['nodes']}/{r['gpu_nodes']}/{r['pods']}",
            r["cold_wall_s"],
            r["cold_requests"],
            f"{r['cold_bytes'] / 1e6:.1f}",
            f"{r['cold_rss_mb']:.0f}",
            r["warm_wall_s"],
            r["warm_ssh_probe_s"],
            r["warm_requests"],
            f"{r['warm_bytes'] / 1e3:.1f}",
            r["kubectl_s"],
            f"{r['ratio_cold']:.2f}",
            f"{r['ratio_warm']:.3f}",
            f"{r['cold_sim_share']:.0%}/{r['warm_sim_share']:.0%}",
        ]
        for r in results
    ]
    headers = [
        "nodes/gpu/pods",
        "cold s",
        "cold req",
        "cold MB",
        "cold RSS MB",
        "warm s",
        "of it SSH s",
        "warm req",
        "warm kB",
        "kubectl s",
        "cold/kubectl",
        "warm/kubectl",
        "sim CPU share c/w",
    ]
    emit("why_pending", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
