"""Every scenario's expectations through the watch-fed cache, the reader ``gpubot serve`` uses,
beside the direct API reader that the one-shot CLI uses, on one simulator, the node reads over SSH;
each report meets the expectation and the JSON contract (test_expect's checks, which test_expect
makes of the CLI's run over the agent).

The cache answers the reads interface's views from its own indexes (``bot.probes.cache``) and the
direct reader derives them from its lists (``bot.probes.views``): a scenario whose report differs
between the two is a bug in one of them. One simulator and one cache per scenario file serve all
its expectations; the report is compared whole (less its timing), as JSON. And neither reader
writes: no write reaches the API, and every node read is an allow-listed read.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.cli import build_parser, invocation_from_args
from bot.commands import Invocation
from bot.probes.exec import EXEC_COMMANDS
from bot.probes.ssh import READ_COMMANDS
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario
from tests.scenarios.report_checks import assert_expected, assert_report_contract

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [p for p in sorted((ROOT / "scenarios").glob("*.yaml")) if load_scenario(p).expect]


def _invocation(run: str) -> Invocation:
    return replace(invocation_from_args(build_parser().parse_args(shlex.split(run))), cluster="")


#: what depends on when the answer was given, not on what was read (the two runs are a moment apart)
_CLOCK_KEYS = frozenset({"elapsed_ms", "age_s"})


def _comparable(value: Any) -> Any:
    """The report as the user reads it, less how long it took and how old its events were then."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in _CLOCK_KEYS}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON documents differ, as paths with both values (what the failure prints)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.300} (direct) != {b!r:.300} (cache)"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
async def test_the_cache_reader_answers_as_the_direct_one(path: Path, tmp_path: Path) -> None:
    scenario = load_scenario(path)
    async with SimCluster(scenario, workdir=tmp_path / "sim") as sim:
        settings = sim.settings()
        direct, cached = Service(settings), Service(settings, use_cache=True)
        try:
            cache = cached.clients.cache_for("")
            assert cache is not None and await cache.wait_ready(30), "the cache never synced"
            for exp in scenario.expect:
                inv = _invocation(exp.run)
                want = (await direct.run(inv)).to_dict()
                got = (await cached.run(inv)).to_dict()
                assert cache.ready and all(cache.fresh(kind) for kind in cache.KINDS), "answered from the API"
                differ = _differences(_comparable(want), _comparable(got))
                assert not differ, f"{path.name}: {exp.run}: the readers differ: " + "; ".join(differ[:5])
                # the checks test_expect makes of its CLI run over the agent, here over SSH
                assert_report_contract(want)
                assert_expected(path, exp, got)
            # a diagnosis never writes, whichever reader it reads through
            assert sim.api.writes == [], f"{path.name}: a diagnosis wrote: {sim.api.writes[:3]}"
            for record in sim.ssh.command_log:
                assert record.allowed and record.command in READ_COMMANDS, record
            for _ns, _pod, _container, argv, _code in sim.api.exec_log:
                assert list(argv) in EXEC_COMMANDS.values(), argv
        finally:
            await direct.close()
            await cached.close()
