"""One cold why-pending in a fresh process, as the CLI runs it (default settings, no cache): the
in-process breakdown beside the end-to-end CLI timing of ``bench.bench_why_pending``.

``python -m bench.cold_child INFO_JSON NAMESPACE POD``: prints one JSON line with the wall time
of ``Service.run``, the API requests and bytes the reader counted, and the process's peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path

from bench.common import SimProc
from bot.cli import tune_gc
from bot.commands import parse_invocation
from bot.exit_heap import keep_until_exit
from bot.service import Service


def peak_rss_mb() -> float:
    """This process's own peak RSS.

    ``getrusage``'s ru_maxrss survives exec on Linux: a child forked from a large benchmark parent
    would report the parent's size. VmHWM belongs to the process's own address space.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(info_path: str, namespace: str, pod: str) -> None:
    tune_gc()  # as the CLI does
    keep_until_exit()  # and keeps what the answer was built from to its exit (bot.exit_heap)
    info = json.loads(Path(info_path).read_text())
    sim = SimProc(0, info, Path(info_path).parent)
    service = Service(sim.settings())
    inv = parse_invocation(["why-pending", pod, "-n", namespace])
    started = time.perf_counter()
    report = await service.run(inv)
    wall = time.perf_counter() - started
    stats = service.clients.reads_for(info["cluster"]["name"]).stats
    await service.close()
    out = {
        "wall_s": wall,
        "requests": stats.requests,
        "bytes": stats.bytes_received,
        "maxrss_mb": peak_rss_mb(),
        "codes": sorted({f.code for f in report.findings}),
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
