"""Run every benchmark, print their tables, and write ``bench/results/LATEST.md``.

Each benchmark runs in its own process (memory figures stay separate); their JSON lines are
collected, checked against the targets of issue 18, and written with the machine they ran on,
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
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, RSS_GROWTH_LIMIT_MB, machine, md_table, median, rss_text

RESULTS = ROOT / "bench" / "results" / "LATEST.md"
NOTES = ROOT / "bench" / "notes.yaml"

#: module -> its arguments per mode: the full run, ``--quick`` (a smoke run of the real suite)
#: and ``--tiny`` (what the unit suite runs: every benchmark end to end on a toy cluster)
SUITE: dict[str, dict[str, list[str]]] = {
    "bench.bench_why_pending": {
        "full": [],
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
        "full": ["--runs", "2"],
        "quick": ["--sizes", "50", "--runs", "1", "--no-silent"],
        "tiny": ["--sizes", "4", "--runs", "1", "--no-silent"],
    },
    "bench.bench_slack_ack": {
        "full": [],
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


def run(module: str, args: list[str], loads: list[float]) -> dict[str, Any]:
    print(f"\n== {module} {' '.join(args)}", flush=True)
    loads.append(os.getloadavg()[0])
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stdout.write(proc.stderr[-4000:])
        raise SystemExit(f"{module} failed with exit code {proc.returncode}")
    line = next(ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("BENCH_JSON "))
    return dict(json.loads(line.removeprefix("BENCH_JSON ")))


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


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
        "Generated with `realistic=1` (bot/sim/generate_realistic.py): managedFields, env, a projected "
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
        f"kubectl minimal {big['runs']['kubectl']}, kubectl seed {big['runs']['kubectl_seed']}. Times are medians "
        "unless marked first. Default settings (SSH deadline 10 s).",
        "",
    ]
    out.append(
        md_table(
            [
                "nodes / GPU nodes / pods",
                "cold CLI s",
                "first CLI s",
                "floor s",
                "cold÷floor",
                "first÷floor",
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
                "kubectl minimal s",
                "kubectl seed s",
                "cold÷kubectl",
                "warm÷kubectl",
            ],
            [
                [
                    f"{r['nodes']} / {r['gpu_nodes']} / {r['pods']}",
                    r["cli_wall_s"],
                    r["cli_first_s"],
                    r["floor_s"],
                    f"{r['ratio_floor']:.2f}",
                    f"{r['ratio_floor_first']:.2f}",
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
        f"- **Floor**: a fresh Python process that only downloads every node and pod from the same simulator "
        f"(pages of 2000, one keep-alive connection) and parses them with {big['floor_parser']} "
        "(bench/floor_child.py); it reads "
        + ", ".join(f"{r['floor_bytes'] / 1e6:.0f} MB at {r['pods']} pods" for r in sizes)
        + ". The cold CLI reads less than that when the GPU nodes are at most a tenth of the cluster (pods on "
        "those nodes only, one field-selected list each), so it can beat the floor.",
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
    return out


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
            verdict(r["met"]),
            f"{r['bot_cpu_s']:.2f} + {r['sim_cpu_s']:.2f}",
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
            ],
            rows,
        ),
        "",
        f"Bound = ceil(nodes ÷ {first['concurrency']}) × round trip, the round trip being connect + ONE command "
        "(the combined allow-listed read) on one healthy node, measured alone. Budget = 1.5 × bound (+ the "
        f"deadline, {first['deadline_s']:g} s by default, for the run with a silent node). Simulated per-command "
        f"latency {first['latency_ms']} ms on every node command (SSH and agent alike). "
        '"fan-out" is the node-readings step alone; the rest of the wall is the API reads, the checks and the '
        "report.",
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


def targets(
    wp: dict[str, Any], ns: dict[str, Any], ack: dict[str, Any], loop: dict[str, Any], sw: dict[str, Any]
) -> list[tuple[str, bool, str, str]]:
    big = max(wp["sizes"], key=lambda r: r["pods"])
    at = f"{big['nodes']} nodes / {big['pods']} pods"
    out = [
        (
            f"cold CLI ≤ 1.6× floor at {at}",
            big["ratio_floor"] <= 1.6,
            f"{big['ratio_floor']:.2f}× ({big['cli_wall_s']:.2f} s vs {big['floor_s']:.2f} s; first run "
            f"{big['ratio_floor_first']:.2f}×)",
            "cold_floor",
        ),
        (
            f"cold CLI ≤ 3 s at {at}",
            big["cli_wall_s"] <= 3.0,
            f"{big['cli_wall_s']:.2f} s (first {big['cli_first_s']:.2f} s; "
            f"service.run alone {big['service_run_s']:.2f} s)",
            "cold_wall",
        ),
        (
            f"warm why-pending ≤ 150 ms median at {at}",
            big["warm_wall_s"] <= 0.150,
            f"{big['warm_wall_s'] * 1000:.0f} ms ({big['warm_ssh_probe_s'] * 1000:.0f} ms of it SSH)",
            "warm_wall",
        ),
        ("warm ≤ 3 API requests", big["warm_requests"] <= 3, f"{big['warm_requests']} requests", "warm_requests"),
        (f"warm RSS ≤ 250 MB at {at}", big["warm_rss_mb"] <= 250, f"{big['warm_rss_mb']:.0f} MB", "warm_rss"),
        (
            f"Slack ack p99 ≤ 100 ms with {ack['diagnoses']} real diagnoses in flight",
            ack["met"],
            f"{ack['p99_ms']:.0f} ms (loop stall {ack['loop_stall_ms']:.0f} ms, load {ack['load_average']:.1f})",
            "slack_ack",
        ),
        (
            f"Slack ack p99 ≤ 100 ms while a why-pending reads {loop['events']:,} events",
            loop["met"],
            f"{loop['p99_ms']:.0f} ms (longest loop stall {loop['loop_stall_ms']:.0f} ms)",
            "loop",
        ),
    ]
    for transport in ("ssh", "agent"):
        rows = [r for r in ns["sizes"] if r["transport"] == transport]
        if rows:
            out.append(
                (
                    f"node-status ≤ 1.5× bound via {transport} (one combined read per node)",
                    all(r["met"] for r in rows),
                    "; ".join(
                        f"{r['nodes']} nodes{' + 1 silent' if r['silent_nodes'] else ''}: {r['wall_s']:.2f} s "
                        f"vs {r['budget_s']:.2f} s ({r['vs_bound']:.1f}× bound)"
                        for r in rows
                    ),
                    f"node_status_{transport}",
                )
            )
    out.append(
        (
            "proactive sweep within the node-status budget, memory bounded",
            all(r["met"] for r in sw["sizes"]),
            "; ".join(
                f"{r['nodes']} nodes: {r['steady_sweep_s']:.2f} s vs {r['budget_s']:.2f} s, peak RSS "
                f"{r.get('rss_growth_mb', 0.0):+.0f} MB over the steady sweeps (≤ +{RSS_GROWTH_LIMIT_MB:.0f})"
                for r in sw["sizes"]
            ),
            "sweep",
        )
    )
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
        f"{os.getloadavg()[0]:.2f}. On a shared machine other processes slow every figure.",
        "Produced by one `./scripts/bench.sh` run (→ `python -m bench.run_all`). The simulator runs in its own "
        f"process on the same machine, on {sim_loop()} (see bench/simproc.py)."
        + (
            f" Resumed run: the results of {', '.join(reused)} come from the interrupted run's log (`--resume`), "
            "the wall time and load averages above are the resumed part's."
            if reused
            else ""
        ),
        "",
    ]
    table = targets(wp, ns, ack, loop, sw)
    if "pending" in results:
        table.append(pending_target(results["pending"]))
    out += [
        "## Targets (issue 18)",
        "",
        md_table(["target", "verdict", "measured"], [[t, verdict(ok), v] for t, ok, v, _ in table]),
    ]
    notes = yaml.safe_load(NOTES.read_text(encoding="utf-8"))
    missed = [(t, notes.get(key, "no note yet")) for t, ok, _, key in table if not ok]
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
    for module, modes in SUITE.items():
        name = module.removeprefix("bench.bench_")
        if name in done:
            print(f"\n== {module}: results taken from {args.resume}", flush=True)
            results[name] = done[name]
            continue
        r = run(module, modes[mode], loads)
        results[str(r.pop("bench"))] = r
    text = report(results, time.perf_counter() - t0, mode != "full", loads, sorted(done))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
