"""``gpubot sim``: serve a scenario in the foreground until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import yaml

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


def run_sim_foreground(path: str, *, generate: str = "", write: str = "") -> int:
    if generate:
        from bot.sim.generate import generate_scenario, parse_spec

        data = generate_scenario(**parse_spec(generate))
        if write:
            Path(write).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
            print(f"wrote {write}")
            return 0
        scenario = scenario_from_dict(data, source=f"generated({generate})")
    elif path:
        scenario = load_scenario(path)
    else:
        raise UsageError("give a scenario file or --generate nodes=N,gpu_nodes=G,pods=P,seed=S")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(scenario))
    sys.stdout.flush()
    return 0
