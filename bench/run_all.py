"""Run every benchmark, print their tables, and write ``bench/results/LATEST.md``.

Each benchmark runs in its own process (memory figures stay separate); their JSON lines are
collected, checked against the targets of issue 8, and written with the machine they ran on.
``python -m bench.run_all [--quick]`` (``--quick``: one size each, fewer runs, for a smoke test;
the results file then says so).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, machine, md_table

RESULTS = ROOT / "bench" / "results" / "LATEST.md"
#: the 1-minute load average when the suite started
LOAD_AT_START = os.getloadavg()[0]
NOTES = ROOT / "bench" / "notes.yaml"


def run(module: str, *args: str) -> dict[str, Any]:
    print(f"\n== {module} {' '.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stdout.write(proc.stderr[-4000:])
        raise SystemExit(f"{module} failed with exit code {proc.returncode}")
    line = next(ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("BENCH_JSON "))
    return dict(json.loads(line.removeprefix("BENCH_JSON ")))


def verdict(ok: bool) -> str:
    return "met" if ok else "missed"


def report(
    wp: dict[str, Any], ns: dict[str, Any], ack: dict[str, Any], loop: dict[str, Any], elapsed: float, quick: bool
) -> str:
    m = machine()
    sizes = wp["sizes"]
    big = max(sizes, key=lambda r: r["pods"])
    out = [
        "# Benchmark results (latest run)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['platform']}.",
        f"Whole suite: {elapsed:.0f} s wall{' (QUICK smoke run: reduced sizes/runs)' if quick else ''}; "
        f"load average {LOAD_AT_START:.2f} at the start, {os.getloadavg()[0]:.2f} at the end (other processes on "
        "the machine slow every figure).",
        "Produced by `make bench` (scripts/bench.sh → `python -m bench.run_all`). The simulator runs in its own",
        "process on the same machine; its CPU share of each phase is reported.",
        "",
        "## why-pending (target bench/target-pending-0, an 8-GPU pod no full node can take)",
        "",
        f"Runs per size: cold {big['runs']['cold']} (a fresh process each), warm {big['runs']['warm']} "
        f"(after one warm-up), kubectl {big['runs']['kubectl']}. Times are medians. SSH deadline 2 s.",
        "",
    ]
    out.append(
        md_table(
            [
                "nodes / GPU nodes / pods",
                "cold s",
                "cold requests",
                "cold MB read",
                "cold peak RSS MB",
                "warm s",
                "warm: SSH probe s",
                "warm: rest s",
                "warm requests",
                "warm kB read",
                "kubectl s",
                "bot÷kubectl cold",
                "bot÷kubectl warm",
                "sim CPU share cold/warm",
            ],
            [
                [
                    f"{r['nodes']} / {r['gpu_nodes']} / {r['pods']}",
                    r["cold_wall_s"],
                    r["cold_requests"],
                    f"{r['cold_bytes'] / 1e6:.1f}",
                    f"{r['cold_rss_mb']:.0f}",
                    r["warm_wall_s"],
                    r["warm_ssh_probe_s"],
                    r["warm_wall_without_ssh_s"],
                    r["warm_requests"],
                    f"{r['warm_bytes'] / 1e3:.1f}",
                    r["kubectl_s"],
                    f"{r['ratio_cold']:.2f}",
                    f"{r['ratio_warm']:.3f}",
                    f"{r['cold_sim_share']:.0%} / {r['warm_sim_share']:.0%}",
                ]
                for r in sizes
            ],
        )
    )
    mem = [r for r in sizes if r["warm_memory_pods"]]
    out += [
        "",
        "kubectl procedure (sequential, as by hand): `describe pod`, `get events --field-selector "
        "involvedObject.name=…`, `describe nodes -l nvidia.com/gpu.product`, `get pods -A -o wide`; per-step "
        "seconds at the largest size: " + ", ".join(f"{s:.2f}" for s in big["kubectl_steps_s"]) + ". It does no "
        "SSH; the bot's figures include SSH to up to 16 candidate nodes.",
        "",
        "Cache: initial sync (paginated lists of pods, nodes, namespaces, DaemonSets, Deployments) "
        + ", ".join(f"{r['warm_sync_s']:.1f} s / {r['warm_sync_requests']} requests at {r['pods']} pods" for r in sizes)
        + ".",
    ]
    if mem:
        out.append(
            "Memory per cached pod (tracemalloc, a fresh slim store filled by one relist): "
            + ", ".join(f"{r['warm_bytes_per_pod']:.0f} B at {r['warm_memory_pods']} pods" for r in mem)
            + "."
        )
    out += ["", "## node-status over SSH, one silent node (`ssh: timeout`)", ""]
    out.append(
        md_table(
            [
                "GPU nodes",
                "concurrency",
                "per-node round trip s",
                "lower bound s",
                "wall s (median)",
                "first run s",
                "1.5×LB + deadline s",
                "target",
                "CPU s bot + sim per run",
            ],
            [
                [
                    r["nodes"],
                    r["concurrency"],
                    r["round_trip_s"],
                    r["lower_bound_s"],
                    r["wall_s"],
                    r["first_run_s"],
                    r["budget_s"],
                    verdict(r["met"]),
                    f"{r['bot_cpu_s']:.2f} + {r['sim_cpu_s']:.2f}",
                ]
                for r in ns["sizes"]
            ],
        )
    )
    out += [
        "",
        f"Deadline {ns['sizes'][0]['deadline_s']:g} s (short, for the benchmark); simulated per-command latency "
        f"{ns['sizes'][0]['latency_ms']} ms; lower bound = ceil(nodes ÷ concurrency) × round trip measured alone on "
        "one healthy node.",
        "",
        "## Slack ack latency (HTTP mode)",
        "",
        md_table(
            ["commands", "in flight", "p50 ms", "p99 ms", "max ms", "HTTP statuses", "target p99 ≤ 100 ms"],
            [
                [
                    ack["commands"],
                    ack["concurrency"],
                    ack["p50_ms"],
                    ack["p99_ms"],
                    ack["max_ms"],
                    ack["statuses"],
                    verdict(ack["met"]),
                ]
            ],
        ),
        "",
        f"Each diagnosis takes {ack['work_ms']} ms (a stand-in service) and posts its progress message and report "
        "to a local Slack Web API, so acks are measured while earlier commands are being worked on.",
        "",
        f"## The event loop while a why-pending reads {loop['events']:,} events",
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
        "`gpubot serve` as wired in production (watch-fed cache, the Bolt app over HTTP, remediation on) against a "
        "simulator whose pending pod has that many FailedScheduling events; signed `/gpu help` commands go out while "
        'the why-pending runs and their acks are timed (p50/p99 over those sent while it ran). "Idle" is the same '
        "burst with nothing running; the stall is how late a 5 ms sleep of the loop woke up.",
        "",
        "## Targets",
        "",
    ]
    targets: list[tuple[str, bool, str, str]] = [
        (
            f"warm why-pending ≤ 150 ms median at {big['nodes']} nodes / {big['pods']} pods",
            big["warm_wall_s"] <= 0.150,
            f"{big['warm_wall_s'] * 1000:.0f} ms ({big['warm_ssh_probe_s'] * 1000:.0f} ms of it SSH)",
            "warm_wall",
        ),
        ("warm ≤ 3 API requests", big["warm_requests"] <= 3, f"{big['warm_requests']} requests", "warm_requests"),
        ("cold ≤ 3 s (paginated reads)", big["cold_wall_s"] <= 3.0, f"{big['cold_wall_s']:.2f} s", "cold_wall"),
        ("cold peak RSS ≤ 300 MB", big["cold_rss_mb"] <= 300, f"{big['cold_rss_mb']:.0f} MB", "cold_rss"),
        (
            "≥ 5× faster than kubectl (warm)",
            all(r["ratio_warm"] <= 0.2 for r in sizes),
            ", ".join(f"{1 / r['ratio_warm']:.1f}×" for r in sizes),
            "kubectl_warm",
        ),
        (
            "≥ 5× faster than kubectl (cold)",
            all(r["ratio_cold"] <= 0.2 for r in sizes),
            ", ".join(f"{1 / r['ratio_cold']:.1f}×" for r in sizes),
            "kubectl_cold",
        ),
        (
            "node-status within 1.5× lower bound + deadline",
            all(r["met"] for r in ns["sizes"]),
            ", ".join(f"{r['nodes']} nodes: {r['wall_s']:.2f} s vs {r['budget_s']:.2f} s" for r in ns["sizes"]),
            "node_status",
        ),
        ("Slack ack p99 ≤ 100 ms", ack["met"], f"{ack['p99_ms']:.0f} ms", "slack_ack"),
        (
            f"Slack ack p99 ≤ 100 ms while a why-pending reads {loop['events']:,} events",
            loop["met"],
            f"{loop['p99_ms']:.0f} ms (longest loop stall {loop['loop_stall_ms']:.0f} ms)",
            "loop",
        ),
    ]
    out.append(md_table(["target", "verdict", "measured"], [[t, verdict(ok), v] for t, ok, v, _ in targets]))
    notes = yaml.safe_load(NOTES.read_text(encoding="utf-8"))
    missed = [(t, notes[key]) for t, ok, _, key in targets if not ok]
    if missed:
        out += ["", "### Why missed, and what it would take", ""]
        out += [f"- **{t}**: {note}" for t, note in missed]
    out += ["", "Warm ≤ 3 requests: " + notes["warm_requests"]]
    out += [
        "",
        "## Raw results",
        "",
        "```json",
        json.dumps({"why_pending": wp, "node_status": ns, "slack_ack": ack, "loop": loop}, indent=1),
        "```",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.quick:
        wp = run("bench.bench_why_pending", "--sizes", "200:40:5000", "--cold-runs", "1", "--warm-runs", "3")
        ns = run("bench.bench_node_status", "--sizes", "50", "--runs", "1")
    else:
        wp = run("bench.bench_why_pending")
        ns = run("bench.bench_node_status")
    ack = run("bench.bench_slack_ack")
    loop = run("bench.bench_loop", *(["--events", "5000"] if args.quick else []))
    text = report(wp, ns, ack, loop, time.perf_counter() - t0, args.quick)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
