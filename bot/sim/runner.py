"""``gpubot sim``: serve a scenario in the foreground until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any

from bot.errors import UsageError
from bot.sim.cluster import SimCluster
from bot.sim.scenario import Scenario, load_scenario, scenario_from_dict


async def _serve(scenario: Scenario) -> None:
    async with SimCluster(scenario) as sim:
        print(sim.describe(), flush=True)
        print("serving; Ctrl-C to stop", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()


def run_sim_foreground(path: str, *, data: dict[str, Any] | None = None, source: str = "") -> int:
    """Serve the scenario file at ``path``, or ``data`` already built in memory (a generated
    cluster: the caller builds it, so the simulator never depends on the generators)."""
    if data is not None:
        scenario = scenario_from_dict(data, source=source or "generated")
    elif path:
        scenario = load_scenario(path)
    else:
        raise UsageError("give a scenario file or --generate nodes=N,gpu_nodes=G,pods=P,seed=S")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(scenario))
    sys.stdout.flush()
    return 0
