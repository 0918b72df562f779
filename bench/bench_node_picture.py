"""The node-status picture over generated clusters of 500 and 1,000 GPU nodes.

Each size: a generated scenario served by the simulator, one real ``node-status`` through the
service (API and SSH, as the bot runs it), then the PNG rendered from that report ``--runs``
times. Prints the median render time, the PNG size and whether it met the target (2 s for 500
nodes, issue 15); the diagnosis time is printed for context only.

``python -m bench.bench_node_picture [--sizes 500,1000] [--runs 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from bench.common import SimProc, emit, median, sim_process, table
from bot.commands import parse_invocation
from bot.service import Service
from bot.views.card_state import node_card_states, totals
from bot.views.node_picture import render_node_picture

TARGET_S = 2.0


async def measure(sim: SimProc, nodes: int, runs: int) -> dict[str, Any]:
    service = Service(sim.settings())
    try:
        t = time.perf_counter()
        report = await service.run(parse_invocation(["node-status"]))
        diagnosis = time.perf_counter() - t
    finally:
        await service.close()
    render_node_picture(report)  # first render: imports Pillow and loads the fonts
    walls, size = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        size = len(render_node_picture(report))
        walls.append(time.perf_counter() - t)
    counts = totals(node_card_states(row) for row in report.nodes)
    wall = median(walls)
    return {
        "nodes": len(report.nodes),
        "cards": sum(counts.values()),
        "states": counts,
        "render_s": wall,
        "png_bytes": size,
        "diagnosis_s": diagnosis,
        "target_s": TARGET_S,
        "met": wall <= TARGET_S,
        "runs": runs,
        "requested_nodes": nodes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,1000")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        with sim_process(f"nodes={size},gpu_nodes={size},pods={size * 4},seed=1") as sim:
            results.append(asyncio.run(measure(sim, size, args.runs)))
    rows = [
        [
            r["nodes"],
            r["cards"],
            r["render_s"],
            r["png_bytes"],
            r["diagnosis_s"],
            "met" if r["met"] else "missed",
            ", ".join(f"{k} {v}" for k, v in r["states"].items()),
        ]
        for r in results
    ]
    headers = ["GPU nodes", "cards", "render s (median)", "PNG bytes", "node-status s", "< 2 s", "cards by state"]
    emit("node_picture", table(headers, rows), {"sizes": results})


if __name__ == "__main__":
    main()
