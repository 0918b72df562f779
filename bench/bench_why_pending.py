"""why-pending at cluster scale: cold (the real CLI process) vs the floor vs warm vs kubectl.

For each size a generated cluster with realistic objects (``realistic=1``) runs in its own
process (``bench.simproc``). Cold: the real ``gpubot why-pending --json`` process, timed from
spawn to exit, several runs (median, and the first run apart). Floor: the necessary-reads floor,
a fresh process that downloads and parses exactly the objects the diagnosis needs (the pod, its
events, the nodes, the pods on the candidate nodes) with the CLI's own selectors
(``bench.floor_child necessary``); every cold figure is given as a ratio to it. Download: a fresh
process that downloads every node and pod (``bench.floor_child everything``), what the watch cache
of ``gpubot serve`` must read before it is warm: the time to warm is given as a ratio to it.
Imports only: a fresh process that imports exactly the modules one real why-pending imported
(``bench.imports_child``). Breakdown: ``Service.run`` alone in a fresh process (``bench.cold_child``: requests,
bytes). Warm: a fresh process that imports what ``gpubot serve`` imports runs a ``Service`` with
``use_cache=True``, waits until the cache has synced, times several runs and reports its RSS
(``bench.warm_child``). kubectl: the minimal competent procedure
(``KUBECTL_MINIMAL``) and the seed's longer one (``KUBECTL_SEED``), run as an operator would.

``python -m bench.bench_why_pending [--sizes 200:40:5000,...] [--large] [--cold-runs N] [--warm-runs N] [--plain]``
(``--large`` adds ``LARGE_SIZE``, 10,000 nodes / 200,000 pods: about ten minutes more, and a
simulator of several GB; kubectl's seed procedure, which lists every pod, is skipped there.)
Only reads from the simulator it started.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from bench.common import ANSWERED, ROOT, SimProc, emit, in_turns, median, sim_process, table
from bench.floor_child import Reader
from bot.kube.gpu import gpu_node_names
from bot.probes.kube import PER_NODE_CONCURRENCY, PER_NODE_SLIM_LIMIT, PER_NODE_SLIM_SHARE, SLIM_PAGE_SIZE
from bot.probes.views import PER_NODE_LIST_LIMIT
from bot.settings import Settings
from bot.synth.generate import TARGET_NAMESPACE, TARGET_POD

DEFAULT_SIZES = "200:40:5000,2000:200:20000,5000:500:100000"
#: the largest GPU clusters (issue 34): opt-in with ``--large``
LARGE_SIZE = "10000:1000:200000"
#: above this many pods kubectl's seed procedure (``get pods -A``) is skipped: minutes, and no target
SEED_MAX_PODS = 100_000


#: the minimal procedure a competent SRE runs by hand: the pod with its events, then the GPU nodes
#: (``describe nodes`` lists each node's non-terminated pods and allocated resources)
KUBECTL_MINIMAL = [
    ["describe", "pod", TARGET_POD, "-n", TARGET_NAMESPACE],
    ["describe", "nodes", "-l", "nvidia.com/gpu.product"],
]
#: the seed benchmark's longer procedure (events again, and every pod in the cluster)
KUBECTL_SEED = [
    ["describe", "pod", TARGET_POD, "-n", TARGET_NAMESPACE],
    ["get", "events", "-n", TARGET_NAMESPACE, f"--field-selector=involvedObject.name={TARGET_POD}"],
    ["describe", "nodes", "-l", "nvidia.com/gpu.product"],
    ["get", "pods", "-A", "-o", "wide"],
]


def kubectl_procedure(kubeconfig: str, steps: list[list[str]]) -> tuple[float, list[float]]:
    """Run ``steps`` one after the other, as by hand. Returns (total seconds, per-step seconds)."""
    kubectl = shutil.which("kubectl") or "kubectl"
    times = []
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    for step in steps:
        t0 = time.perf_counter()
        subprocess.run([kubectl, *step], capture_output=True, env=env, check=True)
        times.append(time.perf_counter() - t0)
    return sum(times), times


class Timed(NamedTuple):
    """One finished process: wall seconds from spawn to exit, its own peak RSS, its CPU, stdout."""

    wall_s: float
    rss_mb: float
    out: str
    #: user and system CPU seconds; system time is where page faults show (a first run on
    #: memory the machine never touched before spends its extra seconds there)
    user_s: float
    sys_s: float


def timed_process(argv: list[str], env: dict[str, str] | None = None) -> Timed:
    """Run a process to its end and time it.

    ``wait4`` gives the child's own resource usage (``RUSAGE_CHILDREN`` would be the maximum over
    every child so far)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ANSWERED:
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    return Timed(wall, usage.ru_maxrss / 1024, out.decode(), usage.ru_utime, usage.ru_stime)


def gpubot_argv() -> list[str]:
    """The installed ``gpubot`` console script when there is one next to this interpreter (what an
    operator runs), else ``python -m bot.cli``."""
    script = Path(sys.executable).with_name("gpubot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


def cli_once(sim: SimProc, config: str) -> dict[str, Any]:
    """One real ``gpubot why-pending --json`` process, end to end (interpreter, imports, clients,
    reads, SSH, checks, printing), with the simulator's settings in a config file."""
    env = {**os.environ, "GPUBOT_CONFIG": config, "PYTHONPATH": str(ROOT)}
    run = timed_process([*gpubot_argv(), "why-pending", TARGET_POD, "-n", TARGET_NAMESPACE, "--json"], env)
    report = json.loads(run.out)
    return {
        "wall_s": run.wall_s,
        "rss_mb": run.rss_mb,
        "user_s": run.user_s,
        "sys_s": run.sys_s,
        "codes": sorted({f["code"] for f in report.get("findings", [])}),
    }


def floor_plan(sim: SimProc) -> Path:
    """What the necessary-reads floor reads, worked out as the CLI works it out (untimed): the
    candidate nodes are the GPU nodes (``bot.kube.gpu``) and the target pod's node; their pods are
    read one field-selected list per node where the CLI does so (``bot.engine.gather.kube``,
    ``KubeReader.slim_pods``), else by walking every pod in slim pages."""
    reader = Reader(sim.info["api_url"])
    page = Settings().page_size
    nodes = {str((n.get("metadata") or {}).get("name", "")): n for n in reader.walk("/api/v1/nodes", page)}
    pod = reader.get(f"/api/v1/namespaces/{TARGET_NAMESPACE}/pods/{TARGET_POD}")
    reader.close()
    candidates = set(gpu_node_names(nodes, set()))
    if (pod.get("spec") or {}).get("nodeName"):
        candidates.add(str(pod["spec"]["nodeName"]))
    few = len(candidates) <= PER_NODE_LIST_LIMIT or len(candidates) <= min(
        PER_NODE_SLIM_LIMIT, PER_NODE_SLIM_SHARE * len(nodes)
    )
    plan = {
        "namespace": TARGET_NAMESPACE,
        "pod": TARGET_POD,
        "page_size": page,
        "slim_page_size": SLIM_PAGE_SIZE,
        "candidates": sorted(candidates),
        "per_node": few,
        "concurrency": PER_NODE_CONCURRENCY if len(candidates) > PER_NODE_LIST_LIMIT else len(candidates),
    }
    path = sim.workdir / "floor-plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def floor_once(sim: SimProc, plan: Path) -> dict[str, Any]:
    """The necessary-reads floor: a fresh process that reads only what the diagnosis needs."""
    run = timed_process([sys.executable, "-m", "bench.floor_child", "necessary", sim.info["api_url"], str(plan)])
    return {**json.loads(run.out), "process_wall_s": run.wall_s, "rss_mb": run.rss_mb}


def download_once(sim: SimProc) -> dict[str, Any]:
    """A fresh process that downloads and parses every node and pod (the time-to-warm reference)."""
    argv = [sys.executable, "-m", "bench.floor_child", "everything", sim.info["api_url"], str(SLIM_PAGE_SIZE)]
    run = timed_process(argv)
    return {**json.loads(run.out), "process_wall_s": run.wall_s}


def record_imports(sim: SimProc, config: str) -> Path:
    """The modules one real ``gpubot why-pending`` imports, recorded in-process (untimed)."""
    listing = sim.workdir / "why-pending-modules.txt"
    env = {**os.environ, "GPUBOT_CONFIG": config, "PYTHONPATH": str(ROOT)}
    argv = ["why-pending", TARGET_POD, "-n", TARGET_NAMESPACE, "--json"]
    subprocess.run(
        [sys.executable, "-m", "bench.imports_child", "record", str(listing), *argv],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )
    return listing


def imports_once(listing: Path) -> Timed:
    """A process that imports exactly what ``gpubot why-pending`` imported (its fixed start-up cost)."""
    argv = [sys.executable, "-m", "bench.imports_child", "import", str(listing)]
    return timed_process(argv, {**os.environ, "PYTHONPATH": str(ROOT)})


def cold_once(sim: SimProc) -> dict[str, Any]:
    """The in-process breakdown: Service.run alone in a fresh process (requests, bytes)."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.cold_child", str(sim.workdir / "info.json"), TARGET_NAMESPACE, TARGET_POD],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def warm_once(sim: SimProc, runs: int) -> dict[str, Any]:
    """The long-running bot's warm runs and RSS, in a fresh process (``bench.warm_child``)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.warm_child",
            str(sim.workdir / "info.json"),
            str(sim.pid),
            TARGET_NAMESPACE,
            TARGET_POD,
            str(runs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_size(nodes: int, gpu: int, pods: int, args: argparse.Namespace) -> dict[str, Any]:
    spec = f"nodes={nodes},gpu_nodes={gpu},pods={pods},seed=1,realistic={int(args.realistic)}"
    with sim_process(spec) as sim:
        load = os.getloadavg()[0]
        config = sim.config_file()
        plan = floor_plan(sim)
        listing = record_imports(sim, config)
        # cold first, while this process is still small: the real CLI, the floor, kubectl's
        # procedure and the imports-only process in turns (each ratio is of the same moments, and
        # the imports are the CLI's own fixed cost at those moments), then the breakdown
        turns = in_turns({
            "cli": (args.cold_runs, lambda: cli_once(sim, config)),
            "floor": (args.floor_runs, lambda: floor_once(sim, plan)),
            "kubectl": (args.kubectl_runs, lambda: kubectl_procedure(sim.kubeconfig, KUBECTL_MINIMAL)),
            "imports": (args.cold_runs, lambda: imports_once(listing)),
        })
        clis, floors, minimal, imported = turns["cli"], turns["floor"], turns["kubectl"], turns["imports"]
        inproc = cold_once(sim)
        imports = median([t.wall_s for t in imported])
        cli_walls = [c["wall_s"] for c in clis]
        floor_walls = [f["process_wall_s"] for f in floors]
        downloads = [download_once(sim) for _ in range(args.download_runs)]
        seed_runs = args.seed_runs if pods <= SEED_MAX_PODS else 0
        seed = [kubectl_procedure(sim.kubeconfig, KUBECTL_SEED) for _ in range(seed_runs)]
        w = warm_once(sim, args.warm_runs)
        cold, floor = median(cli_walls), median(floor_walls)
        download = median([d["process_wall_s"] for d in downloads])
        cpu = median([c["user_s"] + c["sys_s"] for c in clis])
        kmin = median([t for t, _ in minimal])
        kseed = median([t for t, _ in seed]) if seed else float("nan")
        return {
            "nodes": nodes,
            "gpu_nodes": gpu,
            "pods": pods,
            "realistic": bool(args.realistic),
            "sizes": sim.info.get("sizes", {}),
            "sim_generate_s": sim.info["generate_s"],
            "sim_load_s": sim.info["load_s"],
            "cli_wall_s": cold,
            "cli_first_s": cli_walls[0],
            "cli_walls_s": cli_walls,
            "cli_user_s": [c["user_s"] for c in clis],
            "cli_sys_s": [c["sys_s"] for c in clis],
            "cli_rss_mb": max(c["rss_mb"] for c in clis),
            "cli_codes": clis[-1]["codes"],
            "floor_s": floor,
            "floor_first_s": floor_walls[0],
            "floor_inside_s": median([f["wall_s"] for f in floors]),
            "floor_bytes": floors[-1]["bytes"],
            "floor_requests": floors[-1]["requests"],
            "floor_candidates": floors[-1]["candidates"],
            "floor_per_node": json.loads(plan.read_text())["per_node"],
            "floor_parser": floors[-1]["parser"],
            "download_s": download,
            "download_bytes": downloads[-1]["bytes"] if downloads else 0,
            "ratio_warm_download": w["sync_s"] / download if downloads else float("nan"),
            "cli_cpu_s": cpu,
            "load_1m": load,
            "ratio_floor": cold / floor,
            "ratio_floor_first": cli_walls[0] / floor,
            "service_run_s": inproc["wall_s"],
            "imports_s": imports,
            "imports_cpu_s": median([t.user_s + t.sys_s for t in imported]),
            "imports_modules": len(listing.read_text().split()),
            "cold_requests": inproc["requests"],
            "cold_bytes": inproc["bytes"],
            **{f"warm_{k}": v for k, v in w.items()},
            "kubectl_s": kmin,
            "kubectl_steps_s": minimal[-1][1] if minimal else [],
            "kubectl_seed_s": kseed,
            "kubectl_seed_steps_s": seed[-1][1] if seed else [],
            "ratio_cold": cold / kmin if minimal else float("nan"),
            "ratio_warm": w["wall_s"] / kmin if minimal else float("nan"),
            "runs": {
                "cold": args.cold_runs,
                "floor": args.floor_runs,
                "warm": args.warm_runs,
                "kubectl": args.kubectl_runs,
                "kubectl_seed": seed_runs,
                "download": args.download_runs,
            },
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="nodes:gpu_nodes:pods,...")
    ap.add_argument("--large", action="store_true", help=f"add {LARGE_SIZE} (minutes more, a simulator of GBs)")
    ap.add_argument("--download-runs", type=int, default=1, help="runs of the download of every pod and node")
    # seven of each: within one benchmark at 5,000 nodes the CLI's runs spread over 0.39-0.51 s
    # (six full runs of 2026-12-06), so a median of five moved by one or two slow moments; the
    # floor, a median too, runs as often as the CLI it divides
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--floor-runs", type=int, default=7)
    ap.add_argument("--warm-runs", type=int, default=7)
    ap.add_argument("--kubectl-runs", type=int, default=3)
    ap.add_argument("--seed-runs", type=int, default=1, help="runs of the seed's longer kubectl procedure")
    ap.add_argument("--plain", dest="realistic", action="store_false", help="the generator's tiny objects")
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        args.kubectl_runs = args.seed_runs = 0
    results = []
    sizes = args.sizes.split(",") + ([LARGE_SIZE] if args.large and LARGE_SIZE not in args.sizes else [])
    for size in sizes:
        nodes, gpu, pods = (int(x) for x in size.split(":"))
        results.append(run_size(nodes, gpu, pods, args))
    rows = [
        [
            f"{r['nodes']}/{r['gpu_nodes']}/{r['pods']}",
            r["cli_wall_s"],
            r["cli_first_s"],
            r["floor_s"],
            f"{r['ratio_floor']:.2f}x",
            r["service_run_s"],
            f"{r['cli_rss_mb']:.0f}",
            r["warm_wall_s"],
            r["warm_requests"],
            f"{r['warm_rss_mb']:.0f}",
            r["kubectl_s"],
            r["kubectl_seed_s"],
        ]
        for r in results
    ]
    headers = [
        "nodes/gpu/pods",
        "cli s",
        "cli 1st s",
        "floor s",
        "cli/floor",
        "service.run s",
        "cli RSS MB",
        "warm s",
        "warm req",
        "warm RSS MB",
        "kubectl s",
        "kubectl seed s",
    ]
    emit("why_pending", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
