"""The commands that read no cluster, as the real ``gpubot`` process end to end.

``gpubot --help``, ``help``, ``runbook`` (the list) and ``runbook NAME`` load the runbooks (the
last three cross-check them against every built-in check) but reach no cluster, so they should
cost the interpreter and that alone: none of them may import the Kubernetes client, asyncssh,
aiohttp or Bolt (``tests/unit/test_light_commands.py`` checks that; this measures it). Each is
timed from spawn to exit, ``--runs`` times, with the median and the first run shown.

``python -m bench.bench_light [--runs 5]``
"""

from __future__ import annotations

import argparse
import os

from bench.bench_why_pending import gpubot_argv, timed_process
from bench.common import ROOT, emit, median, table

COMMANDS: tuple[tuple[str, ...], ...] = (("--help",), ("help",), ("runbook",), ("runbook", "guide-checkpoint-zombie"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    results = []
    for argv in COMMANDS:
        walls = [timed_process([*gpubot_argv(), *argv], env).wall_s for _ in range(args.runs)]
        results.append({"command": " ".join(argv), "wall_s": median(walls), "first_s": walls[0], "runs": args.runs})
    rows = [[f"gpubot {r['command']}", r["wall_s"], r["first_s"]] for r in results]
    emit("light", table(["command", "median s", "first s"], rows), {"commands": results})


if __name__ == "__main__":
    main()
