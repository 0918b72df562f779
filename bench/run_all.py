"""Run every benchmark, print their tables, and write ``bench/results/LATEST.md``.

Each benchmark runs in its own process (memory figures stay separate); their JSON lines are
collected, checked against the targets of issues 34 and 18, and written with the machine they ran on,
its load average (other processes on a shared machine slow every figure), each miss's measured
cause (``bench/notes.yaml``) and the raw JSON. ``./scripts/bench.sh [--quick]`` runs it
(``--quick``: one small size each and fewer runs, a smoke run; the results file then says so).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, RSS_GROWTH_LIMIT_MB, machine, md_table, median, rss_text
from bot import event_loop

RESULTS = ROOT / "bench" / "results" / "LATEST.md"
NOTES = ROOT / "bench" / "notes.yaml"

#: module -> its arguments per mode: the full run, ``--quick`` (a smoke run of the real suite)
#: and ``--tiny`` (what the unit suite runs: every benchmark end to end on a toy cluster)
SUITE: dict[str, dict[str, list[str]]] = {
    "bench.bench_why_pending": {
        # 10,000 nodes / 200,000 pods is a target size (issue 34): about ten minutes more
        "full": ["--large"],
        "quick": [
            "--sizes",
            "200:40:5000",
            "--cold-runs",
            "2",
            "--floor-runs",
            "1",
            "--warm-runs",
            "3",
            "--kubectl-runs",
            "1",
        ],
        "tiny": [
            "--sizes",
            "12:4:60",
            "--cold-runs",
            "1",
            "--warm-runs",
            "1",
            "--kubectl-runs",
            "0",
            "--seed-runs",
            "0",
        ],
    },
    "bench.bench_node_status": {
        # the median of five runs: of two, one slow run was half the figure
        "full": ["--runs", "5", "--also-shared"],
        "quick": ["--sizes", "50", "--runs", "1", "--no-silent"],
        "tiny": ["--sizes", "4", "--runs", "1", "--no-silent"],
    },
    "bench.bench_slack_ack": {
        "full": ["--size", "5000:500:100000"],
        "quick": ["--diagnoses", "10", "--commands", "20"],
        "tiny": ["--size", "12:4:60", "--diagnoses", "2", "--commands", "3"],
    },
    "bench.bench_loop": {"full": [], "quick": ["--events", "5000"], "tiny": ["--events", "50", "--commands", "5"]},
    "bench.bench_light": {"full": [], "quick": ["--runs", "3"], "tiny": ["--runs", "1"]},
    "bench.bench_pending": {
        "full": [],
        "quick": ["--size", "500:50:10000:50", "--runs", "2"],
        "tiny": ["--size", "12:4:60:5", "--runs", "1", "--plain"],
    },
    "bench.bench_watch_sweep": {
        "full": [],
        "quick": ["--sizes", "100", "--runs", "2"],
        "tiny": ["--sizes", "6", "--runs", "1"],
    },
}


#: a benchmark of a measuring run starts once the 1-minute load average is at most this per core
QUIET_LOAD_PER_CORE = 0.5
#: and waits no longer than this for it (the load it started at is in the report either way)
SETTLE_MAX_S = 90.0


def settle(
    *, cores: int | None = None, limit_s: float = SETTLE_MAX_S,
    load: Callable[[], tuple[float, float, float]] = os.getloadavg, sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Wait until the machine is quiet (the 1-minute load average at most ``QUIET_LOAD_PER_CORE``
    a core), at most ``limit_s``; the seconds waited.

    Why: the first benchmark of a suite started right after the test suite (both cores busy, a
    load of 1.9) measured the cold CLI 8% slower against its floor than the runs that began
    quiet; the load average decays within a minute or so of the work that raised it."""
    quiet = QUIET_LOAD_PER_CORE * (cores or os.cpu_count() or 1)
    start = clock()
    while load()[0] > quiet and clock() - start < limit_s:
        sleep(2.0)
    return clock() - start


def run(module: str, args: list[str], loads: list[float], *, quiet: bool = False) -> dict[str, Any]:
    print(f"\n== {module} {' '.join(args)}", flush=True)
    if quiet and (waited := settle()) >= 1:
        print(f"(waited {waited:.0f} s for the load average to fall: {os.getloadavg()[0]:.2f})", flush=True)
    loads.append(os.getloadavg()[0])
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stdout.write(proc.stderr[-4000:])
        raise SystemExit(f"{module} failed with exit code {proc.returncode}")
    line = next(ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("BENCH_JSON "))
    return dict(json.loads(line.removeprefix("BENCH_JSON ")))


def verdict(ok: bool | None) -> str:
    """None: the run did not measure it (a size or benchmark it was not asked for)."""
    return "met" if ok else "**not measured**" if ok is None else "**missed**"


#: the sizes issue 34 names, as (nodes, pods)
SMALL, BIG, LARGE = (200, 5000), (5000, 100000), (10000, 200000)


def at_size(wp: dict[str, Any], size: tuple[int, int]) -> dict[str, Any] | None:
    """The why-pending results of one size, if this run measured it."""
    return next((r for r in wp["sizes"] if (r["nodes"], r["pods"]) == size), None)


def per_10k(r: dict[str, Any], key: str) -> float:
    return float(r[key]) / (r["pods"] / 10000)


def _kb(d: dict[str, Any], key: str) -> str:
    return f"{d.get(key, 0) / 1000:.1f}"


def sizes_section(wp: dict[str, Any]) -> list[str]:
    out = ["## Object sizes (served JSON, bytes → kB)", ""]
    rows = []
    for r in wp["sizes"]:
        for kind, d in sorted(r["sizes"].items()):
            rows.append(
                [
                    f"{r['nodes']}/{r['pods']}",
                    kind,
                    d.get("n", 0),
                    _kb(d, "min"),
                    _kb(d, "p10"),
                    _kb(d, "median"),
                    _kb(d, "p90"),
                    _kb(d, "max"),
                    _kb(d, "mean"),
                ]
            )
    out.append(md_table(["cluster nodes/pods", "kind", "n", "min", "p10", "median", "p90", "max", "mean"], rows))
    out += [
        "",
        "Generated with `realistic=1` (bot/synth/generate_realistic.py): managedFields, env, a projected "
        "service-account token volume, probes, tolerations, conditions, container statuses, owner references; "
        "nodes with labels, annotations, the four conditions, nodeInfo and a 40-image list. Pending pods "
        "(no container statuses) are the small tail; the pods below 1 kB are the handful of pods the "
        "simulator itself adds (node agents).",
        "",
    ]
    return out


def why_pending_section(wp: dict[str, Any]) -> list[str]:
    sizes = wp["sizes"]
    big = max(sizes, key=lambda r: r["pods"])
    out = [
        "## why-pending (target bench/target-pending-0, an 8-GPU pod no full node can take)",
        "",
        f"Runs per size: cold CLI {big['runs']['cold']} (a fresh `gpubot why-pending --json` process each, timed "
        f"from spawn to exit), floor {big['runs']['floor']}, warm {big['runs']['warm']} (after one warm-up), "
        f"kubectl minimal {big['runs']['kubectl']}, kubectl seed {big['runs']['kubectl_seed']} (not above 100,000 "
        "pods), download 1. The cold CLI, the floor, kubectl minimal and the imports-only process run in turns "
        "(CLI, floor, kubectl, imports, CLI, ...), so each ratio is of the same moments of a shared machine. "
        "Times are medians unless marked first. "
        "Default settings (SSH deadline 10 s). Load: the 1-minute load average when the size started.",
        "",
    ]
    out.append(
        md_table(
            [
                "nodes / GPU nodes / pods",
                "load",
                "cold CLI s",
                "first CLI s",
                "floor s",
                "cold÷floor",
                "first÷floor",
                "floor requests",
                "imports only s",
                "service.run s",
                "cold requests",
                "cold MB",
                "CLI peak RSS MB",
                "warm s",
                "warm: SSH s",
                "warm: rest s",
                "warm requests",
                "warm RSS MB",
                "cache sync s",
                "download all s",
                "sync÷download",
                "kubectl minimal s",
                "kubectl seed s",
                "cold÷kubectl",
                "warm÷kubectl",
            ],
            [
                [
                    f"{r['nodes']} / {r['gpu_nodes']} / {r['pods']}",
                    f"{r.get('load_1m', float('nan')):.2f}",
                    r["cli_wall_s"],
                    r["cli_first_s"],
                    r["floor_s"],
                    f"{r['ratio_floor']:.2f}",
                    f"{r['ratio_floor_first']:.2f}",
                    r.get("floor_requests", ""),
                    r["imports_s"],
                    r["service_run_s"],
                    r["cold_requests"],
                    f"{r['cold_bytes'] / 1e6:.1f}",
                    f"{r['cli_rss_mb']:.0f}",
                    r["warm_wall_s"],
                    r["warm_ssh_probe_s"],
                    r["warm_wall_without_ssh_s"],
                    r["warm_requests"],
                    f"{r['warm_rss_mb']:.0f}",
                    r["warm_sync_s"],
                    r.get("download_s", float("nan")),
                    f"{r.get('ratio_warm_download', float('nan')):.2f}",
                    r["kubectl_s"],
                    r["kubectl_seed_s"],
                    f"{r['ratio_cold']:.2f}",
                    f"{r['ratio_warm']:.3f}",
                ]
                for r in sizes
            ],
        )
    )
    out += [
        "",
        "- **Floor** (necessary reads): a fresh Python process that downloads and parses, with "
        f"{big['floor_parser']} over keep-alive connections (HTTP/1.1 spoken by hand, each node's image list cut "
        "before parsing, a gpubot command's collector thresholds: as the CLI reads), exactly the objects the "
        "diagnosis needs with the "
        "CLI's own selectors and page sizes: the pod, its events (`involvedObject.name=`), every node, and the "
        "pods on the candidate (GPU) nodes, one `spec.nodeName=` list per node where the CLI does that, else "
        "every pod in pages of 2000 (bench/floor_child.py `necessary`, planned from gpubot's own constants). It "
        "makes these reads one after another, each list page after page (the per-node lists eight at a time, as "
        "the CLI reads them); the CLI overlaps some of its reads with other work: it reads the nodes while it "
        "imports its engine, and asks for a list's next page while it parses the one before "
        "(bot/probes/list_pages.py). It reads "
        + ", ".join(
            f"{r['floor_bytes'] / 1e6:.1f} MB in {r.get('floor_requests', '?')} requests at {r['pods']} pods "
            f"({r.get('floor_candidates', '?')} candidate nodes, "
            f"{'per node' if r.get('floor_per_node') else 'all pods'})"
            for r in sizes
        )
        + ". The CLI's cold requests and MB are beside it: the CLI reads a little more (API discovery, the "
        "GPU-stack DaemonSets, quotas).",
        "- **Download all / time to warm**: a fresh process that downloads and parses every node and pod "
        "(bench/floor_child.py `everything`, pages of 2000, read as the floor reads): "
        + ", ".join(f"{r.get('download_bytes', 0) / 1e6:.0f} MB at {r['pods']} pods" for r in sizes)
        + ". The cache sync is the time from the start of a service with the watch cache (what `gpubot serve` "
        "runs) until every store has synced; until then each question is answered cold through the API reader, "
        "never queued behind the sync (bot.probes.cache).",
        "- **Imports only**: a fresh process that imports exactly the modules one real `gpubot why-pending` "
        "imported (bench/imports_child.py: "
        + ", ".join(f"{r.get('imports_modules', '?')} modules, {r.get('imports_cpu_s', float('nan')):.2f} s CPU"
                    for r in sizes[:1])
        + " at the smallest size), timed from spawn to exit.",
        "- **kubectl minimal** (what a competent SRE runs): `kubectl describe pod <pod> -n <ns>` (the pod and its "
        "events) and `kubectl describe nodes -l nvidia.com/gpu.product` (each GPU node's allocated resources and "
        "non-terminated pods); per-step seconds at the largest size: "
        + ", ".join(f"{s:.2f}" for s in big["kubectl_steps_s"])
        + ".",
        "- **kubectl seed** (the seed benchmark's longer procedure, for comparison): the two above plus "
        "`get events --field-selector involvedObject.name=<pod>` and `get pods -A -o wide`; per-step seconds: "
        + (", ".join(f"{s:.2f}" for s in big["kubectl_seed_steps_s"]) or "not run")
        + ".",
        "- **CPU of the cold CLI**, the first run against the median of all: "
        + "; ".join(
            f"{r['pods']} pods: user {r['cli_user_s'][0]:.2f} vs {median(r['cli_user_s']):.2f} s, system "
            f"{r['cli_sys_s'][0]:.2f} vs {median(r['cli_sys_s']):.2f} s"
            for r in sizes
            if r.get("cli_sys_s")
        )
        + ". Where a first run is slower by its extra system time it is paying page faults on memory the "
        "machine had not touched since it booted (a VM backs guest memory on first use): on the machine of "
        "issue 18's notes, a process that first touched 1.5 GB took 7.8 s and the first CLI run after it was "
        "as fast as the rest.",
        "- Neither kubectl procedure does SSH; the bot's figures include the physical reads of up to 16 candidate "
        "nodes. Warm RSS is the RSS of the process holding the synced cache and the service after the runs.",
        "",
    ]
    return out + scaling_section(sizes)


def scaling_section(sizes: list[dict[str, Any]]) -> list[str]:
    """Cold CPU and warm RSS per 10,000 pods across the sizes: growth linear or better keeps the
    per-10,000 figures flat or falling as the cluster grows."""
    rows = [
        [
            f"{r['nodes']} / {r['gpu_nodes']} / {r['pods']}",
            f"{r.get('cli_cpu_s', float('nan')):.2f}",
            f"{per_10k(r, 'cli_cpu_s'):.3f}" if "cli_cpu_s" in r else "",
            f"{r['warm_rss_mb']:.0f}",
            f"{per_10k(r, 'warm_rss_mb'):.1f}",
            f"{r['warm_sync_s']:.2f}",
            f"{per_10k(r, 'warm_sync_s'):.2f}",
        ]
        for r in sorted(sizes, key=lambda r: r["pods"])
    ]
    headers = ["nodes / GPU nodes / pods", "cold CPU s", "cold CPU s per 10k pods", "warm RSS MB",
               "warm RSS MB per 10k pods", "cache sync s", "cache sync s per 10k pods"]
    return [
        "### Scaling",
        "",
        md_table(headers, rows),
        "",
        "Cold CPU is the cold CLI's user + system seconds (median of its runs); the fixed start-up (interpreter, "
        "imports) dominates the small sizes, so their per-10,000-pods figures are the highest.",
        "",
    ]


def scaling_ok(wp: dict[str, Any]) -> tuple[bool | None, str]:
    """Linear or better: from each size to the next larger one, cold CPU and warm RSS per 10,000
    pods grow by at most 10 %."""
    sizes = sorted((r for r in wp["sizes"] if "cli_cpu_s" in r), key=lambda r: r["pods"])
    if len(sizes) < 2:
        return None, "one size only"
    ok = all(
        per_10k(b, key) <= 1.1 * per_10k(a, key)
        for a, b in zip(sizes, sizes[1:], strict=False)
        for key in ("cli_cpu_s", "warm_rss_mb")
    )
    text = "; ".join(
        f"{r['pods']} pods: {per_10k(r, 'cli_cpu_s'):.3f} s CPU, {per_10k(r, 'warm_rss_mb'):.1f} MB" for r in sizes
    )
    return ok, f"per 10,000 pods: {text}"


def node_status_section(ns: dict[str, Any]) -> list[str]:
    rows = [
        [
            r["transport"],
            r["nodes"],
            r["silent_nodes"],
            r["round_trip_s"],
            r["bound_s"],
            r["wall_s"],
            f"{r['vs_bound']:.2f}",
            r["probe_s"],
            f"{r['probe_vs_bound']:.2f}",
            r["budget_s"],
            "comparison" if r.get("comparison_only") else verdict(r["met"]),
            f"{r['bot_cpu_s']:.2f} + {r['sim_cpu_s']:.2f}",
            r.get("cores", "shared"),
        ]
        for r in ns["sizes"]
    ]
    first = ns["sizes"][0]
    return [
        "## node-status fan-out (one combined read per node)",
        "",
        md_table(
            [
                "via",
                "GPU nodes",
                "silent",
                "round trip s",
                "bound s",
                "wall s",
                "wall÷bound",
                "fan-out s",
                "fan-out÷bound",
                "budget s",
                "target",
                "CPU s bot + sim per run",
                "cores",
            ],
            rows,
        ),
        "",
        f"Bound = ceil(nodes ÷ {first['concurrency']}) × round trip, the round trip being connect + ONE command "
        "(the combined allow-listed read) on one healthy node, measured alone. Budget = 1.5 × bound (+ the "
        f"deadline, {first['deadline_s']:g} s by default, for the run with a silent node). Simulated per-command "
        f"latency {first['latency_ms']} ms on every node command (SSH and agent alike). "
        '"fan-out" is the node-readings step alone; the rest of the wall is the API reads, the checks and the '
        'report. "cores": where the measured process and the simulator ran (bench/common.py '
        "SimProc.cores_apart: the simulator stands for the nodes and the API server, so it gets a core of its "
        "own); a row marked comparison is the same measurement left to the scheduler, shown, not judged.",
        "",
    ]


def ack_section(ack: dict[str, Any], loop: dict[str, Any]) -> list[str]:
    return [
        "## Slack ack latency with real diagnoses in flight (HTTP mode)",
        "",
        md_table(
            [
                "cluster",
                "why-pendings in flight",
                "acks timed",
                "p50 ms",
                "p99 ms",
                "max ms",
                "loop stall ms",
                "reports posted",
                "all done s",
                "load average",
                "target p99 ≤ 100 ms",
            ],
            [
                [
                    ack["size"],
                    ack["diagnoses"],
                    ack["acks_measured"],
                    ack["p50_ms"],
                    ack["p99_ms"],
                    ack["max_ms"],
                    ack["loop_stall_ms"],
                    f"{ack['reports_posted']}/{ack['diagnoses']}",
                    ack["all_diagnoses_s"],
                    f"{ack['load_average']:.2f}",
                    verdict(ack["met"]),
                ]
            ],
        ),
        "",
        "`gpubot serve` as wired in production (bench/bench_slack_ack.py) against a generated realistic cluster: "
        f"{ack['diagnoses']} signed `/gpu why-pending` commands at once (real diagnoses: cache, API, SSH, checks, "
        f"reports posted to a local Slack Web API), and {ack['commands']} `/gpu help` commands spaced while they "
        "run; every ack sent while a diagnosis was running is timed.",
        "",
        f"### The event loop while a why-pending reads {loop['events']:,} events",
        "",
        md_table(
            [
                "events",
                "diagnosis s",
                "commands (sent while it ran)",
                "ack p50 ms",
                "ack p99 ms",
                "max ms",
                "longest loop stall ms",
                "idle: ack p99 / stall ms",
                "load average",
                "target p99 ≤ 100 ms",
            ],
            [
                [
                    loop["events"],
                    loop["diagnosis_s"],
                    f"{loop['commands']} ({loop['acks_during_diagnosis']})",
                    loop["p50_ms"],
                    loop["p99_ms"],
                    loop["max_ms"],
                    loop["loop_stall_ms"],
                    f"{loop['idle_p99_ms']:.1f} / {loop['idle_loop_stall_ms']:.1f}",
                    f"{loop['load_average']:.2f}",
                    verdict(loop["met"]),
                ]
            ],
        ),
        "",
    ]


def light_section(light: dict[str, Any]) -> list[str]:
    rows = [[f"`gpubot {r['command']}`", r["wall_s"], r["first_s"]] for r in light["commands"]]
    runs = light["commands"][0]["runs"] if light["commands"] else 0
    return [
        "## Commands that read no cluster (bench/bench_light.py)",
        "",
        f"The real process from spawn to exit, {runs} runs each: they load the runbooks (and cross-check them "
        "against every check) but import neither the Kubernetes client nor asyncssh.",
        "",
        md_table(["command", "median s", "first s"], rows),
        "",
    ]


def sweep_section(sw: dict[str, Any]) -> list[str]:
    rows = [
        [
            r["nodes"],
            r["round_trip_s"],
            r["budget_s"],
            r["first_sweep_s"],
            r["steady_sweep_s"],
            r["steady_posts"],
            verdict(r["met"]),
            r["heap_peak_mb"],
            rss_text(r),
        ]
        for r in sw["sizes"]
    ]
    return [
        "## Proactive sweep (bench/bench_watch_sweep.py)",
        "",
        md_table(
            [
                "GPU nodes",
                "round trip s",
                "budget s",
                "first sweep s",
                "steady sweep s",
                "steady posts",
                "target",
                "heap peak MiB",
                "peak RSS MiB by steady sweep (growth, traced)",
            ],
            rows,
        ),
        "",
    ]


def _size_text(size: tuple[int, int]) -> str:
    return f"{size[0]:,} nodes / {size[1]:,} pods"


def _missing(target: str, key: str, why: str = "this run did not measure the size") -> tuple[str, None, str, str]:
    return (target, None, why, key)


def why_pending_targets(wp: dict[str, Any]) -> list[tuple[str, bool | None, str, str]]:
    """Issue 34's why-pending targets, each at the size it names (not measured: said so)."""
    out: list[tuple[str, bool | None, str, str]] = []
    small, big, large = at_size(wp, SMALL), at_size(wp, BIG), at_size(wp, LARGE)
    t = f"cold why-pending ≤ 1.0× kubectl minimal at {_size_text(SMALL)}"
    out.append((t, small["ratio_cold"] <= 1.0, f"{small['ratio_cold']:.2f}× ({small['cli_wall_s']:.2f} s vs "
                f"{small['kubectl_s']:.2f} s)", "cold_small_kubectl") if small else _missing(t, "cold_small_kubectl"))
    first = min(wp["sizes"], key=lambda r: r["pods"])
    out.append((
        "imports-only process ≤ 0.35 s (what one why-pending imports)",
        first["imports_s"] <= 0.35,
        f"{first['imports_s']:.2f} s ({first.get('imports_modules', '?')} modules, "
        f"{first.get('imports_cpu_s', float('nan')):.2f} s CPU)",
        "imports",
    ))
    t = f"cold ≤ 1.5× necessary-reads floor at {_size_text(BIG)}"
    out.append((t, big["ratio_floor"] <= 1.5, f"{big['ratio_floor']:.2f}× ({big['cli_wall_s']:.2f} s vs "
                f"{big['floor_s']:.2f} s; first run {big['ratio_floor_first']:.2f}×)", "cold_floor")
               if big else _missing(t, "cold_floor"))
    t = f"cold ≤ 0.25× kubectl minimal at {_size_text(BIG)}"
    out.append((t, big["ratio_cold"] <= 0.25, f"{big['ratio_cold']:.2f}× ({big['cli_wall_s']:.2f} s vs "
                f"{big['kubectl_s']:.2f} s)", "cold_kubectl") if big else _missing(t, "cold_kubectl"))
    t = f"cold ≤ 1.5× necessary-reads floor at {_size_text(LARGE)}"
    out.append((t, large["ratio_floor"] <= 1.5, f"{large['ratio_floor']:.2f}× ({large['cli_wall_s']:.2f} s vs "
                f"{large['floor_s']:.2f} s)", "cold_floor_large") if large else _missing(t, "cold_floor_large"))
    for size, r, wall_key, rss_mb, rss_key in ((BIG, big, "warm_wall", 180, "warm_rss"),
                                               (LARGE, large, "warm_wall_large", 350, "warm_rss_large")):
        t = f"warm why-pending ≤ 150 ms median at {_size_text(size)}"
        out.append((t, r["warm_wall_s"] <= 0.150, f"{r['warm_wall_s'] * 1000:.0f} ms "
                    f"({r['warm_ssh_probe_s'] * 1000:.0f} ms of it SSH)", wall_key) if r else _missing(t, wall_key))
        t = f"warm RSS ≤ {rss_mb} MB at {_size_text(size)}"
        out.append((t, r["warm_rss_mb"] <= rss_mb, f"{r['warm_rss_mb']:.0f} MB", rss_key)
                   if r else _missing(t, rss_key))
    if big:
        out.append(("warm ≤ 3 API requests", big["warm_requests"] <= 3, f"{big['warm_requests']} requests",
                    "warm_requests"))
    t = f"time to warm ≤ 0.5× downloading every pod and node at {_size_text(BIG)}"
    out.append((t, big["ratio_warm_download"] <= 0.5, f"{big['ratio_warm_download']:.2f}× ({big['warm_sync_s']:.1f} s "
                f"vs {big['download_s']:.1f} s)", "time_to_warm")
               if big and "ratio_warm_download" in big else _missing(t, "time_to_warm"))
    ok, text = scaling_ok(wp)
    out.append(("scaling: cold CPU and warm RSS per 10,000 pods linear or better across the sizes", ok, text,
                "scaling"))
    return out


def targets(
    wp: dict[str, Any],
    ns: dict[str, Any],
    ack: dict[str, Any],
    loop: dict[str, Any],
    sw: dict[str, Any],
    pending: dict[str, Any] | None = None,
) -> list[tuple[str, bool | None, str, str]]:
    """Every target of issue 34 (and the earlier ones it keeps), each with its verdict."""
    out = why_pending_targets(wp)
    ack_size = tuple(int(x) for x in str(ack.get("size", "")).split(":")) if ack.get("size") else ()
    ack_big = len(ack_size) == 3 and (ack_size[0], ack_size[2]) == BIG
    out.append((
        f"Slack ack p99 ≤ 100 ms with 50 real diagnoses in flight at {_size_text(BIG)}",
        (ack["met"] and ack["diagnoses"] >= 50) if ack_big else None,
        f"{ack['p99_ms']:.0f} ms with {ack['diagnoses']} at {ack.get('size', '?')} (loop stall "
        f"{ack['loop_stall_ms']:.0f} ms, load {ack['load_average']:.1f})",
        "slack_ack",
    ))
    out.append((
        f"Slack ack p99 ≤ 100 ms while a why-pending reads {loop['events']:,} events",
        loop["met"],
        f"{loop['p99_ms']:.0f} ms (longest loop stall {loop['loop_stall_ms']:.0f} ms)",
        "loop",
    ))
    for transport, limit in (("agent", 1.2), ("ssh", 1.0)):
        rows = [r for r in ns["sizes"]
                if r["transport"] == transport and not r["silent_nodes"] and not r.get("comparison_only")]
        at_500 = [r for r in rows if r["nodes"] >= 500]
        out.append((
            f"node-status ≤ {limit}× its bound via {transport} at 500 GPU nodes",
            all(r["vs_bound"] <= limit for r in at_500) if at_500 else None,
            "; ".join(f"{r['nodes']} nodes: {r['wall_s']:.2f} s vs bound {r['bound_s']:.2f} s "
                      f"({r['vs_bound']:.2f}×)" for r in rows) or "not run",
            f"node_status_{transport}",
        ))
        silent = [r for r in ns["sizes"] if r["transport"] == transport and r["silent_nodes"]]
        if silent:
            out.append((
                f"node-status with a silent node within its bound + deadline (1.5×) via {transport}",
                all(r["met"] for r in silent),
                "; ".join(f"{r['nodes']} nodes + 1 silent: {r['wall_s']:.2f} s vs {r['budget_s']:.2f} s"
                          for r in silent),
                f"node_status_{transport}_silent",
            ))
    if pending:
        out.append(pending_target(pending))
    else:
        t = f"`gpubot pending -A` ≤ 2× one cold why-pending at {_size_text(BIG)}"
        out.append(_missing(t, "pending", "bench/bench_pending.py did not run in this suite"))
    out.append((
        "proactive sweep within the node-status budget, memory bounded",
        all(r["met"] for r in sw["sizes"]),
        "; ".join(
            f"{r['nodes']} nodes: {r['steady_sweep_s']:.2f} s vs {r['budget_s']:.2f} s, peak RSS "
            f"{r.get('rss_growth_mb', 0.0):+.0f} MB over the steady sweeps (≤ +{RSS_GROWTH_LIMIT_MB:.0f})"
            for r in sw["sizes"]
        ),
        "sweep",
    ))
    return out


#: ``gpubot pending -A`` against one cold why-pending on the same cluster (issue 34)
PENDING_RATIO = 2.0


def pending_target(pd: dict[str, Any]) -> tuple[str, bool, str, str]:
    """The pending target's row: its wall ratio to one cold why-pending, with the CPU ratio and
    the load beside it (a shared machine moves the wall times)."""
    at = f"{pd['nodes']} nodes / {pd['pods']} pods, {pd['pending_gpu']} pending GPU pods"
    return (
        f"`gpubot pending -A` ≤ {PENDING_RATIO:g}× one cold why-pending at {at}",
        pd["ratio"] <= PENDING_RATIO and bool(pd.get("complete")),
        f"{pd['ratio']:.2f}× ({pd['pending_s']:.2f} s vs {pd['why_pending_s']:.2f} s; CPU "
        f"{pd['pending_cpu_s']:.2f} s vs {pd['why_pending_cpu_s']:.2f} s; {pd['diagnoses']} of {pd['workloads']} "
        f"workloads diagnosed{'' if pd.get('complete') else '; answer INCOMPLETE'}; load "
        f"{', '.join(f'{x:.1f}' for x in pd.get('load_1m', []))})",
        "pending",
    )


def pending_section(pd: dict[str, Any]) -> list[str]:
    return [
        "## pending -A (bench/bench_pending.py)",
        "",
        md_table(
            ["nodes/gpu/pods", "pending GPU pods", "stuck pods", "workloads", "diagnosed", "pending s",
             "why-pending s", "ratio", "CPU s pending / why-pending", "complete"],
            [[f"{pd['nodes']}/{pd['gpu_nodes']}/{pd['pods']}", pd["pending_gpu"], pd["stuck_pods"], pd["workloads"],
              pd["diagnoses"], f"{pd['pending_s']:.2f}", f"{pd['why_pending_s']:.2f}", f"{pd['ratio']:.2f}×",
              f"{pd['pending_cpu_s']:.2f} / {pd['why_pending_cpu_s']:.2f}", pd.get("complete")]],
        ),
        "",
        f"{pd['summary']} Fresh processes, interleaved, median of {len(pd['pending_walls_s'])} each; load average "
        f"(1 min) around each pair: {', '.join(f'{x:.1f}' for x in pd.get('load_1m', []))}.",
        "",
    ]


def sim_loop() -> str:
    """The event loop the simulator process serves on (bench/simproc.py takes uvloop where installed)."""
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio's default loop"


def resumed(log: Path) -> dict[str, dict[str, Any]]:
    """The results an earlier, interrupted run printed (its ``BENCH_JSON`` lines), by benchmark."""
    out: dict[str, dict[str, Any]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.startswith("BENCH_JSON "):
            r = json.loads(line.removeprefix("BENCH_JSON "))
            out[str(r.pop("bench"))] = r
    return out


def report(
    results: dict[str, dict[str, Any]], elapsed: float, quick: bool, loads: list[float], reused: list[str] | None = None
) -> str:
    wp, ns, ack, loop, sw = (results[k] for k in ("why_pending", "node_status", "slack_ack", "loop", "watch_sweep"))
    m = machine()
    out = [
        "# Benchmark results (latest run)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['platform']}.",
        f"Whole suite: {elapsed:.0f} s wall{' — QUICK smoke run: reduced sizes and runs' if quick else ''}. "
        f"Load average (1 min) at the start of each benchmark: {', '.join(f'{x:.2f}' for x in loads)}; at the end "
        f"{os.getloadavg()[0]:.2f}. On a shared machine other processes slow every figure; each benchmark of a "
        f"measuring run waits (at most {SETTLE_MAX_S:.0f} s) for the load to fall to {QUIET_LOAD_PER_CORE:g} a core "
        "before it starts.",
        "Produced by one `./scripts/bench.sh` run (→ `python -m bench.run_all`). The simulator runs in its own "
        f"process on the same machine, on {sim_loop()} (see bench/simproc.py). What `gpubot serve` does (warm "
        f"answers, Slack acks, node-status through the kept service, the sweeps) is measured on serve's loop, "
        f"{event_loop.chosen('auto')} (bot/event_loop.py); the one-shot CLI runs on asyncio's."
        + (
            f" Resumed run: the results of {', '.join(reused)} come from the interrupted run's log (`--resume`), "
            "the wall time and load averages above are the resumed part's."
            if reused
            else ""
        ),
        "",
    ]
    table = targets(wp, ns, ack, loop, sw, results.get("pending"))
    out += [
        "## Targets (issue 34, and issue 18's that it keeps)",
        "",
        md_table(["target", "verdict", "measured"], [[t, verdict(ok), v] for t, ok, v, _ in table]),
    ]
    notes = yaml.safe_load(NOTES.read_text(encoding="utf-8"))
    missed = [(t, notes.get(key, "no note yet")) for t, ok, _, key in table if ok is False]
    if missed:
        out += ["", "### Why missed (measured cause), and what it would take", ""]
        out += [f"- **{t}**: {note}" for t, note in missed]
    out.append("")
    out += sizes_section(wp) + why_pending_section(wp) + node_status_section(ns) + ack_section(ack, loop)
    out += sweep_section(sw)
    if "pending" in results:
        out += pending_section(results["pending"])
    if "light" in results:
        out += light_section(results["light"])
    out += ["## Raw results", "", "```json", json.dumps(results, indent=1), "```", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one small size each, fewer runs")
    ap.add_argument("--tiny", action="store_true", help="toy sizes: checks the suite runs, measures nothing")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--resume",
        metavar="LOG",
        help="the printed output of an interrupted run: benchmarks whose results it holds are not run again",
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    loads: list[float] = []
    results: dict[str, dict[str, Any]] = {}
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    done = resumed(Path(args.resume)) if args.resume else {}
    todo = []
    for module, modes in SUITE.items():
        name = module.removeprefix("bench.bench_")
        if name in done:
            print(f"\n== {module}: results taken from {args.resume}", flush=True)
            results[name] = done[name]
        else:
            todo.append((module, modes[mode]))
    # a tiny run measures nothing, so its benchmarks need not wait for each other (most of their
    # time is starting simulators and processes); a measuring run has the machine to itself
    with ThreadPoolExecutor(max_workers=3 if mode == "tiny" else 1) as pool:
        for r in pool.map(lambda job: run(job[0], job[1], loads, quiet=mode != "tiny"), todo):
            results[str(r.pop("bench"))] = r
    text = report(results, time.perf_counter() - t0, mode != "full", loads, sorted(done))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
