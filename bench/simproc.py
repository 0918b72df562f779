"""A generated simulated cluster in its own process, for the benchmarks.

``python -m bench.simproc SPEC WORKDIR``: generates the scenario (SPEC as
``bot.synth.generate.parse_spec`` reads it, e.g. ``nodes=200,gpu_nodes=40,pods=5000,realistic=1``;
or, when SPEC is a ``.json`` file, loads that scenario document), starts the API server and the
SSH fleet, writes ``WORKDIR/info.json`` (kubeconfig, SSH targets, keys, how long generation and
loading took, the size distribution of the served pods and nodes), then serves until its stdin
closes. Loopback only; it never reaches anything else.

It runs on uvloop where installed (a runtime dependency: gpubot serve runs on it too): the
simulator stands in for a multi-core API server and hundreds of nodes that answer in parallel,
yet here one Python event loop serves every exec and SSH session on the cores the bot is
measured on, and the default loop's own overhead queued 16 concurrent node reads behind each
other (node-status through the agent: the fan-out took ~1.15 s on it, ~0.95 s on uvloop, with
the same bot and the same CPU seconds in the simulator). ``info.json`` says which loop served (``sim_loop``).

For the same reason each node's answer to the combined read is rendered once and kept
(``SshFleet.keep_combined``; a command that changes the node renews it): real nodes render their
nvidia-smi output on their own CPUs, in parallel, and here that rendering was a third of the
simulator's CPU in a 500-node fan-out (the fan-out of bare execs through the agent: 0.87-0.92 s
with it, 0.73 s without, the bot's CPU unchanged).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from bot.synth.generate import generate_scenario, parse_spec


def distribution(values: list[int]) -> dict[str, float]:
    """min, p10, median, p90, max and mean of the JSON sizes in bytes."""
    if not values:
        return {}
    v = sorted(values)
    at = lambda q: v[min(len(v) - 1, int(q * len(v)))]  # noqa: E731
    return {
        "n": len(v),
        "min": v[0],
        "p10": at(0.1),
        "median": at(0.5),
        "p90": at(0.9),
        "max": v[-1],
        "mean": sum(v) / len(v),
    }


def object_sizes(sim: SimCluster) -> dict[str, dict[str, float]]:
    """The served JSON size of every pod and node. Reading ``raw`` also encodes each object once
    now, as a long-running API server has, so no benchmark run pays the simulator's first encoding."""
    by_kind: dict[str, list[int]] = {"Pod": [], "Node": []}
    for entry in sim.api.store:
        size = len(entry.raw)
        kind = entry.obj.get("kind")
        if kind in by_kind:
            by_kind[kind].append(size)
    return {kind: distribution(v) for kind, v in by_kind.items()}


async def main(spec: str, workdir: Path) -> None:
    t0 = time.perf_counter()
    data = json.loads(Path(spec).read_text()) if spec.endswith(".json") else generate_scenario(**parse_spec(spec))
    t1 = time.perf_counter()
    gc.disable()  # loading 100k objects: nothing cyclic to find
    scenario = scenario_from_dict(data, source=f"generated({spec})")
    del data
    sim = SimCluster(scenario, workdir=workdir / "sim")
    sim.ssh.keep_combined = True  # nothing changes a benchmark's nodes: render each node's read once
    await sim.start()
    gc.enable()
    gc.collect()
    gc.freeze()  # the served objects live as long as the process: keep them out of GC scans
    t2 = time.perf_counter()
    sizes = object_sizes(sim)
    info = {
        "spec": spec,
        "api_url": sim.api.url,
        "cluster": {**asdict(sim.cluster_config()), "ssh_targets": dict(sim.cluster_config().ssh_targets)},
        "ssh_user": sim.ssh.user,
        "generate_s": t1 - t0,
        "load_s": t2 - t1,
        "objects": len(scenario.objects),
        "sizes": sizes,
        "encode_s": time.perf_counter() - t2,
        "sim_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
    }
    tmp = workdir / "info.tmp"
    tmp.write_text(json.dumps(info))
    tmp.rename(workdir / "info.json")
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    await sim.stop()


def _run(coro: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:  # where uvloop is not installed: the default loop (slower, see the docstring)
        asyncio.run(coro)
    else:
        uvloop.run(coro)


if __name__ == "__main__":
    _run(main(sys.argv[1], Path(sys.argv[2])))
