"""``gpubot pending -A`` at cluster scale, against one cold why-pending on the same cluster.

A generated cluster (``bench.simproc``; default 5,000 nodes, 500 GPU nodes, 100,000 pods of which
``pending_gpu`` 500 are pending GPU pods over twenty namespaces, five per ReplicaSet) runs in its
own process. Timed from spawn to exit: the real ``gpubot pending -A --json`` process and the real
``gpubot why-pending`` of the generator's pending target, each a few times, interleaved (median;
the first run apart), with the machine's load average around each pair. The figure is the pending
wall time and its ratio to one cold why-pending: what it costs to ask about every stuck GPU
workload instead of one.

``python -m bench.bench_pending [--size 5000:500:100000:500] [--runs 3] [--plain]``
Only reads from the simulator it started.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit, in_turns, median, sim_process, table
from bot.synth.generate import TARGET_NAMESPACE, TARGET_POD

DEFAULT_SIZE = "5000:500:100000:500"


def gpubot_argv() -> list[str]:
    script = Path(sys.executable).with_name("gpubot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


Run = tuple[float, int, dict[str, Any], float]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], config: str, deadline_s: float = 0) -> Run:
    """(wall seconds from spawn to exit, exit status, the JSON it printed, its CPU seconds). The
    CPU seconds are the gpubot process's own (the simulator is no child that has ended): on a
    shared machine they move less with the load than the wall time does."""
    env = {**os.environ, "GPUBOT_CONFIG": config, "PYTHONPATH": str(ROOT)}
    if deadline_s:
        env["GPUBOT_COMMAND_DEADLINE_S"] = str(deadline_s)
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([*gpubot_argv(), *argv, "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode not in (0, 3, 4):
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, proc.returncode, json.loads(proc.stdout), cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default=DEFAULT_SIZE, help="nodes:gpu_nodes:pods:pending_gpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=0, help="GPUBOT_COMMAND_DEADLINE_S for both (default: 20 s)")
    ap.add_argument("--plain", dest="realistic", action="store_false", help="the generator's tiny objects")
    args = ap.parse_args()
    nodes, gpu, pods, pending = (int(x) for x in args.size.split(":"))
    spec = f"nodes={nodes},gpu_nodes={gpu},pods={pods},pending_gpu={pending},seed=1,realistic={int(args.realistic)}"
    with sim_process(spec) as sim:
        config = sim.config_file()
        # interleaved, so a load that comes and goes on a shared machine weighs on both alike
        loads = [os.getloadavg()[0]]

        def pending_all() -> Run:
            run = timed(["pending", "-A"], config, args.deadline)
            loads.append(os.getloadavg()[0])
            return run

        turns = in_turns({
            "one": (args.runs, lambda: timed(["why-pending", TARGET_POD, "-n", TARGET_NAMESPACE], config,
                                             args.deadline)),
            "many": (args.runs, pending_all),
        })
        one: list[Run] = turns["one"]
        many: list[Run] = turns["many"]
    answer = many[-1][2]["pending"]
    pending_s, why_s = median([r[0] for r in many]), median([r[0] for r in one])
    pending_cpu, why_cpu = median([r[3] for r in many]), median([r[3] for r in one])
    result = {
        "nodes": nodes, "gpu_nodes": gpu, "pods": pods, "pending_gpu": pending, "realistic": bool(args.realistic),
        "pending_s": pending_s, "pending_first_s": many[0][0], "pending_walls_s": [r[0] for r in many],
        "pending_exit": many[-1][1], "why_pending_s": why_s, "why_pending_first_s": one[0][0],
        "why_pending_walls_s": [r[0] for r in one], "ratio": pending_s / why_s,
        "pending_cpu_s": pending_cpu, "why_pending_cpu_s": why_cpu, "cpu_ratio": pending_cpu / why_cpu,
        "stuck_pods": answer["stuck_pods"], "workloads": answer["workloads"], "diagnoses": answer["diagnoses"],
        "causes": [(c["code"], c["pods"]) for c in answer["causes"]], "summary": answer["summary"],
        "complete": many[-1][2].get("complete"), "deadline_s": args.deadline or 20.0,
        "load_1m": [round(x, 2) for x in loads],
    }
    rows = [[f"{nodes}/{gpu}/{pods}", pending, result["stuck_pods"], result["workloads"], result["diagnoses"],
             pending_s, why_s, f"{result['ratio']:.2f}x", f"{pending_cpu:.2f}/{why_cpu:.2f}",
             f"{result['cpu_ratio']:.2f}x"]]
    headers = ["nodes/gpu/pods", "pending gpu", "stuck pods", "workloads", "diagnosed", "pending s",
               "why-pending s", "ratio", "cpu s (pending/why)", "cpu ratio"]
    loadavg = "load average (1 min) before and after each pair: " + ", ".join(f"{x:.1f}" for x in loads)
    emit("pending", table(headers, rows) + "\n" + answer["summary"] + "\n" + loadavg, result)


if __name__ == "__main__":
    main()
