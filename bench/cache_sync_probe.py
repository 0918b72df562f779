"""Issue 34's probe: a synced watch cache's RSS and sync time against a plain download of every pod
and node, in fresh child processes on one simulator (not part of the bench's verdicts).

``python bench/cache_sync_probe.py NODES PODS [trace]``; ``MODES=download,cache,...`` picks the
children (``profile``: cProfile of a pod download), ``MSTATS=1`` prints pymalloc's statistics,
``trace`` prints the largest tracemalloc sites of the synced cache.
"""
from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.getcwd())
from bench.common import sim_process

CHILD = r'''
import gc, json, os, sys, time, tracemalloc
from pathlib import Path
sys.path.insert(0, os.getcwd())
mode, info_path = sys.argv[1], sys.argv[2]
trace = len(sys.argv) > 3
from bench.common import SimProc
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"): return int(line.split()[1]) / 1024
info = json.loads(Path(info_path).read_text())
sim = SimProc(0, info, Path(info_path).parent)
settings = sim.settings()
from bot.probes.clients import GPU_KEPT
from bot.probes.kube_client import new_api_client
cluster = settings.cluster(None)
import orjson
from kubernetes import client
r0 = rss()
if mode == "profile":
    import cProfile, pstats
    api = new_api_client(cluster); core = client.CoreV1Api(api)
    def run():
        tok = ""
        while True:
            kw = {"limit": 500, "_preload_content": False}
            if tok: kw["_continue"] = tok
            data = core.list_pod_for_all_namespaces(**kw).data
            body = orjson.loads(data)
            tok = body["metadata"].get("continue") or ""
            if not tok: break
    cProfile.run("run()", "/tmp/h31b/prof")
    pstats.Stats("/tmp/h31b/prof").sort_stats("tottime").print_stats(15)
    print("{}")
elif mode == "download":
    api = new_api_client(cluster); core = client.CoreV1Api(api)
    t = time.perf_counter(); n = 0; nbytes = 0
    for fn in (core.list_pod_for_all_namespaces, core.list_node):
        tok = ""
        while True:
            kw = {"limit": 500, "_preload_content": False}
            if tok: kw["_continue"] = tok
            data = fn(**kw).data; nbytes += len(data)
            body = orjson.loads(data); n += len(body["items"])
            tok = body["metadata"].get("continue") or ""
            if not tok: break
    print(json.dumps({
        "download_s": time.perf_counter() - t, "cpu_s": time.process_time(), "objects": n, "mb": nbytes / 1e6
    }))
else:
    from bot.probes.cache import WatchCache
    from bot.probes.kube import KubeReader
    reader = KubeReader(
        new_api_client(cluster), page_size=settings.page_size, timeout=settings.api_timeout_s
    )
    if trace: tracemalloc.start(5)
    cache = WatchCache(
        new_api_client(cluster), reader, kept=GPU_KEPT, staleness_s=300, page_size=settings.page_size
    )
    t = time.perf_counter(); cache.start()
    while not cache.ready: time.sleep(0.01)
    sync = time.perf_counter() - t
    gc.collect()
    out = {"sync_s": sync, "cpu_s": time.process_time(), "requests": cache.stats.requests, "rss_mb": rss(),
           "rss_before_mb": r0, "pods": len(cache.stores["Pod"].objects),
           "full": len(cache.stores["Pod"].full), "nodes": len(cache.stores["Node"].objects)}
    import ctypes, io, contextlib
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim(0)
    out["rss_trim_mb"] = rss()
    if os.environ.get("MSTATS"):
        sys._debugmallocstats()
    if trace:
        snap = tracemalloc.take_snapshot()
        out["traced_mb"] = sum(s.size for s in snap.statistics("filename")) / 1e6
        for s in snap.statistics("lineno")[:25]:
            print(f"{s.size/1e6:8.2f} MB {s.count:8d} {s.traceback[0]}", file=sys.stderr)
    cache.stop()
    print(json.dumps(out))
'''

def main() -> None:
    nodes, pods = int(sys.argv[1]), int(sys.argv[2])
    trace = sys.argv[3:4] == ["trace"]
    spec = f"nodes={nodes},gpu_nodes={max(1, nodes // 10)},pods={pods},seed=1,realistic=1"
    with sim_process(spec) as sim:
        info = str(sim.workdir / "info.json")
        env = dict(os.environ)
        for mode in (["cache"] if trace else os.environ.get("MODES", "download,cache,download,cache").split(",")):
            load = os.getloadavg()[0]
            args = [sys.executable, "-c", CHILD, mode, info] + (["trace"] if trace else [])
            quiet = not trace and not os.environ.get("MSTATS")
            out = subprocess.run(args, capture_output=quiet, text=True, env=env, check=True)
            line = out.stdout.strip().splitlines()[-1] if out.stdout else ""
            print(mode, f"load={load:.2f}", line, flush=True)

main()
