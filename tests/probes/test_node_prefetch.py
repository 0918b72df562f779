"""The one-shot CLI asks for every node as soon as the cluster's clients are built, before the
engine is imported (``KubeReader.start_node_prefetch``, ``bot.cli._reading_every_node``): the
diagnosis gets the same nodes, or the same failure, as if it had read them itself."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from bot.cli import READS_EVERY_NODE
from bot.commands import COMMANDS
from bot.engine.checks import builtin_checks
from bot.engine.gather import base_facts
from bot.engine.runbook_dir import load_with_overrides
from bot.engine.runner import reads_of
from bot.errors import KubeApiError
from bot.probes.deadline import until
from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "zombie-checkpoint.yaml"
#: the scenario's pending pod, which waits on a card a zombie allocation holds
POD = ("gpu-full-5d8c6-q7wz2", "-n", "ai")


def test_the_cli_prefetches_for_exactly_the_diagnoses_that_read_every_node() -> None:
    runbooks, checks = load_with_overrides(None), builtin_checks()
    diagnoses = [c.name for c in COMMANDS if c.diagnosis and c.name in runbooks.diagnoses]
    reading = {name for name in diagnoses if "nodes" in base_facts(reads_of(runbooks.diagnosis(name), checks))}
    assert reading == READS_EVERY_NODE


async def test_the_prefetched_list_is_the_list_and_is_taken_once(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        reader = KubeReader(new_api_client(sim.settings().clusters[0]))
        try:
            reader.start_node_prefetch()
            before = reader.stats.requests
            labelled = await reader.list_nodes(label_selector="kubernetes.io/os=linux")  # not the prefetch's
            first = await reader.list_nodes()
            second = await reader.list_nodes()  # read again: a prefetch answers one question
        finally:
            reader.close()
    assert first == second and first and labelled == first
    assert reader.stats.requests - before >= 2  # the labelled list and the second list, each read


async def test_a_failed_prefetch_fails_the_list_as_a_read_would(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        sim.api.faults.add(ApiFault(match="/api/v1/nodes", verb="GET", status=403))
        reader = KubeReader(new_api_client(sim.settings().clusters[0]))
        try:
            with until(time.monotonic() + 30):
                reader.start_node_prefetch()
            with pytest.raises(KubeApiError) as caught:
                await reader.list_nodes()
        finally:
            reader.close()
    assert caught.value.kind == "forbidden" and "nodes" in caught.value.user_message


async def test_the_cli_with_unreadable_nodes_says_so_and_concludes_nothing_from_them(tmp_path: Path) -> None:
    """End to end: a real ``gpubot why-pending`` process whose node list the API refuses."""
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        cluster = {k: v for k, v in asdict(sim.cluster_config()).items() if v not in ("", {}, False)}
        config = tmp_path / "gpubot.yaml"
        config.write_text(yaml.safe_dump({"clusters": [cluster], "ssh_user": sim.ssh.user, "cache_enabled": False}),
                          encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
        env.update({"GPUBOT_CONFIG": str(config), "PYTHONPATH": str(ROOT)})

        walls: list[float] = []

        async def cli(*argv: str) -> tuple[int, dict[str, object]]:
            spawned = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.cli", *argv, "--json", env=env, cwd=ROOT,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 120)
            walls.append(time.monotonic() - spawned)
            return proc.returncode or 0, json.loads(out)

        whole = await cli("why-pending", *POD)
        sim.api.faults.add(ApiFault(match="/api/v1/nodes", verb="GET", status=403))
        refused = await cli("why-pending", *POD)
    assert whole[1]["complete"] is True and whole[1]["findings"][0]["code"] == "CHECKPOINT_ZOMBIE"
    # the elapsed time counts from the process's start, as the node list is asked for before the
    # engine is imported: most of what the asker waited, not the part after the imports
    elapsed = int(whole[1]["elapsed_ms"]) / 1000  # type: ignore[call-overload]
    assert 0.5 * walls[0] <= elapsed <= walls[0] + 0.05, (elapsed, walls[0])
    code, report = refused
    assert report["complete"] is False and code != 0
    assert any("nodes" in u["read"] and u["error"] == "forbidden" for u in report["unreadable"]), report["unreadable"]
    assert not report["findings"] or all(f["code"] != "CHECKPOINT_ZOMBIE" for f in report["findings"])


async def test_the_prefetch_reads_within_the_deadline_of_whoever_started_it(tmp_path: Path) -> None:
    """The prefetch's thread carries the caller's deadline: a server that never answers costs the
    deadline, not the reader's 10 s timeout a try."""
    async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
        sim.api.faults.add(ApiFault(match="/api/v1/nodes", verb="GET", hang=True))
        reader = KubeReader(new_api_client(sim.settings().clusters[0]))
        started = time.monotonic()
        try:
            with until(started + 0.5):
                reader.start_node_prefetch()
            with pytest.raises(KubeApiError) as caught:
                await reader.list_nodes()
        finally:
            reader.close()
    assert caught.value.kind == "timeout" and time.monotonic() - started < 3.0


async def test_a_taker_that_gives_up_leaves_no_traceback_behind(tmp_path: Path) -> None:
    """Ctrl-C or a cancelled command while the prefetched list is awaited: the prefetch's thread
    ends at the deadline without an exception of its own (it would print a traceback)."""
    errors: list[threading.ExceptHookArgs] = []
    previous, threading.excepthook = threading.excepthook, errors.append
    try:
        async with SimCluster(load_scenario(SCENARIO), workdir=tmp_path) as sim:
            sim.api.faults.add(ApiFault(match="/api/v1/nodes", verb="GET", hang=True))
            reader = KubeReader(new_api_client(sim.settings().clusters[0]))
            try:
                with until(time.monotonic() + 0.5):
                    reader.start_node_prefetch()
                taker = asyncio.create_task(reader.list_nodes())
                await asyncio.sleep(0.1)
                taker.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await taker
                await asyncio.sleep(1.0)  # past the deadline: the thread has ended its read
            finally:
                reader.close()
        assert not [t for t in threading.enumerate() if t.name == "node-prefetch"]
    finally:
        threading.excepthook = previous
    assert not errors, [(e.exc_type, e.exc_value) for e in errors]
