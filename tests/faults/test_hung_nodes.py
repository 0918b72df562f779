"""6. A fleet where a third of the nodes hang: the real CLI still answers, names them, and exits.

300 GPU nodes, 100 of which accept the connection and never say a byte: their SSH port accepts
TCP and stays silent (``ssh: timeout``), and exec into their gpubot-node agent pod opens the
stream and stays silent (the agent follows the SSH fault: ``hang``). ``gpubot node-status
--json`` runs as a separate process against the simulator with a short command deadline, once
over SSH and once through the agents (``--node-access agent``). The end state a person checks:
the process ends on its own, every hung node is reported as not read (by name with its reason,
or inside the "not read within the command's deadline" entry), and no hung node is shown as
read. The wait on the process is a hang guard, not a performance figure: the timings are
bench/bench_hung_nodes.py's job.

Every unread node is named in the JSON ``skipped`` list with its own reason (the text and Slack
views group them by reason). And hung nodes cannot starve healthy ones: with 60 nodes, 20 hung
and 4 probe slots, every healthy node is read whether the hung ones come first, last or spread
through the fleet (holding slots until their own deadline, hung-first left 40 healthy unread).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.report import DEADLINE_SKIP
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from bot.synth.generate import generate_scenario
from tests.exit_status import assert_answered
from tests.faults.read_rig import start_cost_s

ROOT = Path(__file__).resolve().parents[2]
NODES, HUNG = 300, 100
#: at least this; the deadline counts from the process's start (imports included), so on a machine
#: where starting takes long it grows with that (``_deadline``), leaving the API reads their time
COMMAND_DEADLINE_S = 3.0
#: each node's own deadline, shorter than the command's, so both ways of giving up are exercised:
#: a hung node that reaches its own deadline is named; the ones still queued at the command
#: deadline are counted in one entry
NODE_DEADLINE_S = 2.0
#: how long the process may take before the test calls it hung: interpreter start and imports on
#: a loaded 2-core machine, the command deadline, and slack; never a performance bound
HANG_GUARD_S = COMMAND_DEADLINE_S * 3 + 120
_ONE = re.compile(r"physical checks on (\S+)$")
#: why a node is not read when the pods on the GPU nodes could not be listed within the deadline
UNLISTED = "not read: it rests on pods on GPU nodes, which could not be read"


def _hung_fleet(nodes: int = NODES, hung_count: int = HUNG, arrangement: str = "spread") -> tuple[SimCluster, set[str]]:
    """``hung_count`` of ``nodes`` GPU nodes hang: the first ones, the last ones, or spread
    through the fleet (every third: hung nodes hold probe slots from the first moment)."""
    data = generate_scenario(nodes=nodes, gpu_nodes=nodes, pods=nodes * 2, seed=7)
    names = sorted(data["nodes"])
    picked = {"first": names[:hung_count], "last": names[-hung_count:], "spread": names[:: nodes // hung_count]}
    hung = set(picked[arrangement][:hung_count])
    for name in hung:
        data["nodes"][name]["ssh"] = "timeout"
    assert len(hung) == hung_count
    return SimCluster(scenario_from_dict(data, source=f"generated:{nodes}-nodes-{hung_count}-hung")), hung


def _deadline() -> float:
    """Twice what starting the process costs now, plus ``COMMAND_DEADLINE_S`` for the reads."""
    return max(COMMAND_DEADLINE_S, 2 * start_cost_s() + COMMAND_DEADLINE_S)


def _config(sim: SimCluster, path: Path, **extra: object) -> Path:
    """The settings file an operator would point GPUBOT_CONFIG at, for the simulator."""
    cluster = sim.cluster_config()
    settings = {
        "clusters": [{**asdict(cluster), "ssh_targets": dict(cluster.ssh_targets)}],
        "ssh_user": sim.ssh.user,
        "state_path": str(path.parent / "state.db"),
        "command_deadline_s": _deadline(),
        "ssh_deadline_s": NODE_DEADLINE_S,
        **extra,
    }
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


async def _node_status(config: Path, transport: str) -> dict[str, Any]:
    """``gpubot node-status --json --node-access TRANSPORT`` as a process; its one JSON answer."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "node-status",
        "--json",
        "--node-access",
        transport,
        cwd=ROOT,
        env={**os.environ, "GPUBOT_CONFIG": str(config), "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=HANG_GUARD_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        pytest.fail(f"gpubot node-status --node-access {transport} did not end within {HANG_GUARD_S:g}s")
    assert out.count(b"\n") == 1, err.decode(errors="replace")[-3000:]  # one JSON object on stdout
    report = dict(json.loads(out))
    assert proc.returncode is not None
    assert_answered(proc.returncode, report)
    return report


def _accounting(report: dict[str, Any]) -> tuple[dict[str, str], set[str]]:
    """(node named as skipped -> why, nodes not read)."""
    named: dict[str, str] = {}
    for skip in report["skipped"]:
        if one := _ONE.match(skip["what"]):
            assert one.group(1) not in named, "one entry per node"
            named[one.group(1)] = skip["why"]
    not_read = {row["node"] for row in report["nodes"] if row["ssh"] != "ok"}
    return named, not_read


@pytest.mark.parametrize("transport", ["ssh", "agent"])
async def test_a_third_of_the_fleet_hung_is_named_as_skipped_and_the_process_ends(
    transport: str, tmp_path: Path
) -> None:
    sim, hung = _hung_fleet()
    async with sim:
        report = await _node_status(_config(sim, tmp_path / "gpubot.yaml"), transport)

    rows = {row["node"]: row for row in report["nodes"]}
    assert len(rows) == NODES, "every GPU node keeps its row, read or not"
    named, not_read = _accounting(report)

    # every hung node is reported as not read, and none of them shows readings
    assert hung <= not_read, f"hung nodes shown as read: {sorted(hung - not_read)[:5]}"
    assert all(not rows[n]["gpus"] for n in hung)
    # ... and the skipped list names each node that was not read, with its own reason: the
    # transport's (it reached its own deadline) or the command's deadline (its turn never came)
    assert set(named) == not_read, sorted(not_read ^ set(named))[:10]
    # (a node that answers may still miss its own deadline on a loaded machine: it is then
    # reported the same way, which is the truth, so only the reason is checked here; on a machine
    # so loaded that the pods on the nodes were not listed in time, no node is read, and each is
    # named with that reason)
    assert set(named.values()) <= {f"{transport} timeout", DEADLINE_SKIP, UNLISTED}, set(named.values())
    assert {rows[n]["ssh"] for n, why in named.items() if why != DEADLINE_SKIP} <= {"timeout"}
    assert {rows[n]["ssh"] for n, why in named.items() if why in (DEADLINE_SKIP, UNLISTED)} <= {"not checked"}
    assert all(row["gpus"] for n, row in rows.items() if n not in not_read), "a row read is read in full"


@pytest.mark.exclusive  # a deadline is the point: alone, so another worker's load cannot fail it
@pytest.mark.parametrize("arrangement", ["first", "last", "spread"])
async def test_hung_nodes_do_not_starve_healthy_ones_whatever_their_order(arrangement: str, tmp_path: Path) -> None:
    """60 nodes, 20 hung, 4 probe slots, 2 s per node, 4 s in all for the reads (the deadline
    counts from process start, so what starting costs on this machine is added): every healthy
    node is read. Hung nodes that held their slots to their own deadline would need 10 s."""
    sim, hung = _hung_fleet(60, 20, arrangement)
    async with sim:
        config = _config(sim, tmp_path / "gpubot.yaml", ssh_concurrency=4, ssh_deadline_s=2.0,
                         command_deadline_s=2 * start_cost_s() + 4.0)
        report = await _node_status(config, "ssh")
    named, not_read = _accounting(report)
    assert not_read - hung == set(), f"healthy nodes not read: {sorted(not_read - hung)}"
    assert hung <= not_read and set(named) == not_read
