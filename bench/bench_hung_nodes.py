"""node-status over 300 GPU nodes of which 100 hang, through the real CLI (issue 14's acceptance).

A hung node (every third GPU node) accepts the connection and never answers: its SSH server
accepts TCP and sends no byte (``ssh: timeout`` in the node's section), and exec into its
gpubot-node agent pod opens the stream and says nothing (the agent follows the SSH fault:
``hang``). The benchmark starts the simulator in its own process, then runs ``python -m bot.cli
node-status --json`` as a subprocess, once per transport and command deadline
(``GPUBOT_COMMAND_DEADLINE_S``), and prints for each:

- ``command s``: the report's own ``elapsed_ms``, counted from where the command's deadline
  starts; the target is ``≤ deadline + 1 s``;
- ``answer s``: from spawning the process to the first byte of the answer on stdout (interpreter
  start, imports and settings included: what a person at a terminal waits), what of it lies
  outside the command's own time, and ``exit s``;
- how many of the hung nodes the report lists as skipped: by name (``ssh timeout`` / ``agent
  timeout``), inside the "not read within the command's deadline" entry (its count), and how
  many hung nodes' rows claim to have been read (must be 0); and how many answering nodes were
  read, and how many were named as timed out (they waited too long for a probe slot).

``python -m bench.bench_hung_nodes [--deadlines 20,5] [--transports ssh,agent] [--latency-ms 20]``
The JSON line's key is ``hung_nodes``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import ANSWERED, ROOT, SimProc, emit, sim_process, table
from bot.report import DEADLINE_SKIP
from bot.synth.generate import generate_scenario

NODES = 300
HUNG = 100
#: one entry per unread node: "physical checks on NODE" (why: the transport's reason, or
#: DEADLINE_SKIP for a node whose turn never came)
_ONE = re.compile(r"physical checks on (\S+)$")


def write_config(sim: SimProc) -> Path:
    """A gpubot config file pointing at the simulator (what an operator's GPUBOT_CONFIG holds)."""
    path = sim.workdir / "gpubot.yaml"
    settings = {
        "clusters": [sim.info["cluster"]],
        "ssh_user": sim.info["ssh_user"],
        "state_path": str(sim.workdir / "state.db"),
    }
    path.write_text(yaml.safe_dump(settings))
    return path


def account(report: dict[str, Any], hung: set[str]) -> dict[str, int]:
    """How the report accounts for the hung nodes: named skips, the late count, rows read."""
    named, late = set(), 0
    for skip in report["skipped"]:
        if (m := _ONE.match(skip["what"])) and skip["why"] == DEADLINE_SKIP:
            late += 1
        elif m:
            named.add(m.group(1))
    rows = {r["node"]: r for r in report["nodes"]}
    return {
        "hung_named_skipped": len(named & hung),
        "healthy_named_skipped": len(named - hung),
        "late_skipped": late,
        "hung_rows_not_read": sum(1 for n in hung if rows.get(n, {}).get("ssh", "ok") != "ok"),
        "hung_rows_read": sum(1 for n in hung if rows.get(n, {}).get("ssh") == "ok"),
        "healthy_rows_read": sum(1 for n, r in rows.items() if n not in hung and r.get("ssh") == "ok"),
    }


def run_cli(config: Path, transport: str, deadline: float) -> tuple[dict[str, Any], float, float]:
    """One ``gpubot node-status --json``: the report, seconds to its first byte and to exit."""
    env = {**os.environ, "GPUBOT_CONFIG": str(config), "GPUBOT_COMMAND_DEADLINE_S": str(deadline)}
    argv = [sys.executable, "-m", "bot.cli", "node-status", "--json", "--node-access", transport]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(1)
    answer = time.perf_counter() - started
    out = first + proc.stdout.read()
    err = proc.stderr.read()
    code = proc.wait(timeout=deadline * 3 + 60)
    exited = time.perf_counter() - started
    if code not in ANSWERED or not out:
        raise SystemExit(f"gpubot node-status exited {code}: {err.decode(errors='replace')[-2000:]}")
    return json.loads(out), answer, exited


def measure(config: Path, hung: set[str], transport: str, deadline: float) -> dict[str, Any]:
    report, answer, exited = run_cli(config, transport, deadline)
    command = report["elapsed_ms"] / 1000
    counts = account(report, hung)
    skipped = counts["hung_named_skipped"] + counts["healthy_named_skipped"] + counts["late_skipped"]
    return {
        "transport": transport,
        "deadline_s": deadline,
        "command_s": command,
        "answer_s": answer,
        "exit_s": exited,
        "target_s": deadline + 1.0,
        "met": command <= deadline + 1.0 and counts["hung_rows_not_read"] == HUNG and skipped >= HUNG,
        "nodes": len(report["nodes"]),
        "hung": HUNG,
        **counts,
    }


def scenario_file(workdir: Path, latency_ms: int) -> tuple[Path, set[str]]:
    """The generated scenario, written for the simulator process, and its hung nodes' names.

    Every third GPU node hangs: spread through the fleet, hung nodes hold probe slots from the
    first moment (the generator's ``silent_nodes`` would put them all at the end of the queue).
    """
    data = generate_scenario(nodes=NODES, gpu_nodes=NODES, pods=NODES * 2, seed=7, latency_ms=latency_ms)
    hung = set(sorted(data["nodes"])[::3][:HUNG])
    for name in hung:
        data["nodes"][name]["ssh"] = "timeout"
    path = workdir / "hung-nodes.json"
    path.write_text(json.dumps(data))
    return path, hung


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--deadlines", default="20,5", help="command deadlines in seconds (20 is the default setting)")
    ap.add_argument("--transports", default="ssh,agent")
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--workdir", default="", help="where to write the scenario (default: a temp dir)")
    args = ap.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gpubot-hung-"))
    spec, hung = scenario_file(workdir, args.latency_ms)
    results = []
    with sim_process(str(spec)) as sim:
        config = write_config(sim)
        for transport in args.transports.split(","):
            for deadline in (float(d) for d in args.deadlines.split(",")):
                results.append({**measure(config, hung, transport, deadline), "latency_ms": args.latency_ms})
    rows = [
        [
            r["transport"],
            r["deadline_s"],
            r["command_s"],
            r["target_s"],
            "met" if r["met"] else "missed",
            r["answer_s"],
            r["answer_s"] - r["command_s"],
            r["exit_s"],
            r["hung_named_skipped"],
            r["late_skipped"],
            r["hung_rows_read"],
            f"{r['healthy_rows_read']}/{r['nodes'] - r['hung']}",
            r["healthy_named_skipped"],
        ]
        for r in results
    ]
    headers = [
        "transport",
        "deadline s",
        "command s",
        "deadline+1 s",
        "target",
        "answer s (process)",
        "outside the command s",
        "exit s",
        "hung skipped by name",
        "late skipped (count)",
        "hung rows read",
        "healthy read",
        "healthy timed out",
    ]
    emit("hung_nodes", table(headers, rows), {"nodes": NODES, "hung": HUNG, "runs": results})


if __name__ == "__main__":
    main()
