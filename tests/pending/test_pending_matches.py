"""``gpubot pending -A`` finds what an exhaustive look finds and says what why-pending says, and does
so without reading every pod of the cluster.

The scan lists only the pods the API reports not running (a server-side field selector) and finds
the GPU pods that run but are not ready among the pods on GPU nodes the diagnoses read anyway. So
on bundled scenarios (pending, crash-looping and not-ready GPU pods, gangs of several pods) the
stuck pods it counts are those the scan's rule picks from every pod of the scenario file, and
each workload's cause is the first finding of why-pending on it. On a generated cluster it reads
fewer bytes from the API than one list of every pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.engine.checks import sched_events
from bot.exit_codes import ExitCode
from bot.pending import run as pending_run
from bot.pending.scan import is_stuck_gpu_pod
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, scenario_from_dict
from bot.sim.threaded import run_in_thread
from bot.synth.generate import generate_scenario
from tests import yaml_data
from tests.faults.read_rig import ROOT, ReadRig

#: pending pods, GPU pods that run and are not ready (crash loops, not-ready containers), and
#: workloads of several stuck pods (gangs)
SCENARIOS = [
    "untolerated-taint.yaml",
    "zombie-checkpoint.yaml",
    "ns-policy-missing.yaml",
    "pod-status-table.yaml",
    "ecc-uncorrectable-crashloop.yaml",
    "cuda13-image-on-550-driver.yaml",
    "runtime-class-not-set-k3s.yaml",
    "gke-kvcache-gpu-taint-k8s131.yaml",
    "volcano-gang-member-missing-k8s130.yaml",
    "kai-gang-8gpu-no-node-k8s130.yaml",
]


def gpubot(argv: list[str]) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*argv, "--json"])
    return status, json.loads(out.getvalue())


def stuck_in_file(path: Path) -> int:
    """How many pods of the scenario file the scan's rule picks, looking at every pod."""
    objects = (yaml_data.load_file(path).get("kubernetes") or {}).get("objects") or []
    return sum(1 for o in objects if isinstance(o, dict) and o.get("kind") == "Pod" and is_stuck_gpu_pod(o))


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_stuck_pod_is_found_and_its_cause_is_why_pendings(name: str) -> None:
    path = ROOT / "scenarios" / name
    status, report = gpubot(["pending", "-A", "--scenario", str(path)])
    answer = report["pending"]
    assert status == ExitCode.FINDINGS, answer
    assert report["complete"] is True
    assert answer["stuck_pods"] == stuck_in_file(path) > 0
    assert not answer["undiagnosed"]
    for cause in answer["causes"]:
        for line in cause["workloads"]:
            assert line["diagnosed"]
            _, alone = gpubot(["why-pending", line["workload"], "-n", line["namespace"], "--scenario", str(path)])
            assert alone["findings"][0]["code"] == cause["code"], line


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadRig]:
    """A cluster whose GPU nodes are few (so the pods on them are read node by node, as at scale)."""
    workdir = tmp_path_factory.mktemp("gen")
    data = generate_scenario(nodes=200, gpu_nodes=10, pods=3000, seed=3, pending_gpu=20)
    scenario = scenario_from_dict(data, source="generated:200-nodes-3000-pods")
    with run_in_thread(SimCluster(scenario, workdir=workdir / "sim")) as sim:
        yield ReadRig(sim, workdir)


def _bytes_of(rig: ReadRig, argv: list[str]) -> tuple[int, dict[str, Any]]:
    rig.sim.api.stats.reset()
    status, report = gpubot(["--config", str(rig.config()), *argv])
    assert status in (ExitCode.OK, ExitCode.FINDINGS), report
    return rig.sim.api.stats.bytes_sent, report


async def _list_every_pod(rig: ReadRig) -> int:
    service = Service(rig.sim.settings())
    try:
        return len(await service.clients.for_cluster("").reads.list_pods())
    finally:
        await service.close()


def test_pending_does_not_read_every_pod(generated: ReadRig) -> None:
    generated.sim.api.stats.reset()
    assert asyncio.run(_list_every_pod(generated)) >= 3000
    every = generated.sim.api.stats.bytes_sent
    read, report = _bytes_of(generated, ["pending", "-A"])
    assert report["pending"]["stuck_pods"] >= 20 and report["complete"] is True
    assert read < every / 2, (read, every)


def test_what_rests_on_the_nodes_alone_is_worked_out_once_for_the_whole_answer(
    generated: ReadRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every diagnosis of a ``pending -A`` answer shares the cluster-wide facts; what a check works
    out of the nodes alone (here: which nodes have a taint or a cordon) is worked out once for the
    answer, not once a diagnosis (``bot.engine.facts.per_cluster``)."""
    asked: list[str] = []
    has_taints = sched_events.has_taints

    def counted(node: dict[str, Any], **kwargs: Any) -> bool:
        asked.append(str(node["metadata"]["name"]))
        return has_taints(node, **kwargs)

    monkeypatch.setattr(sched_events, "has_taints", counted)
    _, report = _bytes_of(generated, ["pending", "-A"])
    assert report["complete"] is True and report["pending"]["diagnoses"] >= 2
    assert asked and len(asked) == len(set(asked))  # each node once, though every diagnosis asks


@contextlib.contextmanager
def faulted(rig: ReadRig, fault: ApiFault) -> Iterator[None]:
    """The simulator answers with ``fault`` while the block runs."""
    rig.sim.api.faults.add(fault)
    try:
        yield
    finally:
        rig.sim.api.faults.clear()


async def _many_lists_at_once(rig: ReadRig, count: int) -> None:
    service = Service(rig.sim.settings())
    try:
        reads = service.clients.for_cluster("").reads
        await asyncio.gather(*(reads.list_events(f"team-{i:02d}") for i in range(count)))
    finally:
        await service.close()


def test_many_reads_at_once_keep_their_connections_quietly(generated: ReadRig,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """``pending`` reads every namespace's events and ReplicaSets at once: each read thread keeps
    its connection, so nothing is thrown away with a "Connection pool is full" line on stderr."""
    slow = ApiFault(match="/events", verb="GET", delay_s=0.5)  # all in flight at once
    with faulted(generated, slow), caplog.at_level(logging.WARNING, logger="urllib3"):
        asyncio.run(_many_lists_at_once(generated, 24))
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]


def test_confirmations_cost_at_most_a_quarter_again_what_the_answer_needed() -> None:
    """Extras (workloads like one diagnosed) start only while the answer has taken under 1.25x the
    reads and first diagnoses, at least half a second more on a small cluster, never past the limit."""
    assert pending_run.extras_until(100.0, took=8.0, until=200.0) == 102.0
    assert pending_run.extras_until(100.0, took=0.2, until=200.0) == 100.0 + pending_run.EXTRA_MIN_S
    assert pending_run.extras_until(100.0, took=8.0, until=102.0) == 102.0


def test_a_confirmation_starts_only_where_it_should_end_within_the_window() -> None:
    """An extra takes about what the longest first diagnosis took: one that would run past the
    window is not started (its workload is counted like the diagnosed one of its signature)."""
    assert pending_run.starts_extra(100.0, longest_first=0.3, until=100.5)
    assert not pending_run.starts_extra(100.3, longest_first=0.3, until=100.5)
    assert pending_run.starts_extra(100.0, longest_first=0.0, until=100.0)


def test_pods_on_gpu_nodes_unread_leave_the_answer_incomplete(generated: ReadRig) -> None:
    """Without the pods on GPU nodes, whether a GPU pod runs and is not ready is not known: the
    answer says so (exit 3) instead of listing only the pending ones as if that were all."""
    with faulted(generated, ApiFault(match="spec.nodeName", verb="GET", status=500)):
        status, report = gpubot(["--config", str(generated.config()), "pending", "-A"])
    assert status == ExitCode.INCOMPLETE
    assert report["complete"] is False
    assert any("not ready" in s["what"] for s in report["skipped"]), report["skipped"]
