"""``gpubot pending``: every stuck GPU workload by cause, through the why-pending engine.

Against the simulator over HTTP (the official client) and its SSH nodes: the bundled scenarios
with pending GPU pods, one where nothing waits, a generated multi-namespace cluster, and read
failures that must make the answer say it is incomplete (exit 3).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.pending import run as pending_run
from bot.pending.reads import SharedReads
from bot.probes.kube import KubeReads
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault
from bot.sim.threaded import run_in_thread
from bot.synth.generate import generate_scenario
from tests.faults.read_rig import ROOT, ReadRig

LAB = ROOT / "scenarios" / "lab-mixed-k8s131.yaml"
QUIET = ROOT / "scenarios" / "benign-running-fine-v100-k8s129.yaml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadRig]:
    workdir = tmp_path_factory.mktemp("lab")
    with run_in_thread(SimCluster.from_file(LAB, workdir=workdir / "sim")) as sim:
        yield ReadRig(sim, workdir)


def gpubot(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(argv)
    return status, out.getvalue()


def pending_json(config: Path, *args: str) -> tuple[int, dict[str, Any]]:
    status, out = gpubot(["--config", str(config), "pending", *args, "--json"])
    return status, json.loads(out)


def test_each_cause_is_what_why_pending_says_first(lab: ReadRig) -> None:
    config = lab.config()
    status, report = pending_json(config, "-A")
    assert status == ExitCode.FINDINGS
    answer = report["pending"]
    assert answer["stuck_pods"] == 3 and answer["workloads"] == 3 and answer["diagnoses"] == 3
    assert report["complete"] is True
    lines = [(c["code"], w) for c in answer["causes"] for w in c["workloads"]]
    assert len(lines) == 3
    for code, line in lines:
        _, alone = gpubot(["--config", str(config), "why-pending", line["workload"], "-n", line["namespace"], "--json"])
        assert json.loads(alone)["findings"][0]["code"] == code, line
        assert line["fix"] and len(line["fix"]) <= pending_run.FIX_CHARS
    # the worst first: severities never go up the list
    order = {"critical": 0, "warning": 1, "info": 2}
    ranks = [order[c["severity"]] for c in answer["causes"]]
    assert ranks == sorted(ranks)


def test_the_text_is_one_line_per_workload_under_a_summary(lab: ReadRig) -> None:
    status, out = gpubot(["--config", str(lab.config()), "pending", "-n", "lab"])
    assert status == ExitCode.FINDINGS
    assert "3 GPU pod(s) not running in 3 workload(s), namespace lab" in out
    # one line per workload: the owners are not in the scenario, so each is named by its pod
    rows = [line.split()[1] for line in out.splitlines() if line.startswith("   lab ")]
    assert sorted(rows) == ["infer-0", "job/batch-job", "trainer-pvc-0"]


def test_a_namespace_without_stuck_gpu_work_exits_0(lab: ReadRig) -> None:
    status, out = gpubot(["--config", str(lab.config()), "pending", "-n", "kube-system"])
    assert status == ExitCode.OK
    assert "No GPU pod is waiting in namespace kube-system." in out


def test_nothing_pending_in_a_healthy_cluster() -> None:
    status, out = gpubot(["pending", "-A", "--scenario", str(QUIET)])
    assert status == ExitCode.OK, out
    assert "No GPU pod is waiting in all namespaces." in out


@pytest.mark.parametrize("match", ["/events?", "/nodes?"])
def test_a_failed_read_makes_the_answer_incomplete(lab: ReadRig, match: str) -> None:
    lab.sim.api.faults.add(ApiFault(match=match, verb="GET", status=403))
    try:
        status, report = pending_json(lab.config(), "-A")
    finally:
        lab.sim.api.faults.clear()
    assert status == ExitCode.INCOMPLETE
    assert report["complete"] is False
    assert report["findings"][0]["code"] == "READ_FORBIDDEN"


def test_the_pod_list_refused_is_no_answer_of_nothing_pending(lab: ReadRig) -> None:
    lab.sim.api.faults.add(ApiFault(match="/pods?", verb="GET", status=500))
    try:
        status, out = gpubot(["--config", str(lab.config()), "pending", "-A"])
    finally:
        lab.sim.api.faults.clear()
    assert status == ExitCode.INCOMPLETE
    assert "The answer is incomplete" in out and "No GPU pod is waiting" not in out
    assert "Could not list the pods of all namespaces" in out


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "generated.yaml"
    data = generate_scenario(nodes=60, gpu_nodes=20, pods=1500, seed=7, pending_gpu=40)
    # JSON is YAML to the scenario loader, and writes in milliseconds where PyYAML's pure-Python
    # emitter took seconds for 1,500 pods
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_generated_cluster_is_grouped_and_bounded(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pending_run, "MAX_DIAGNOSES", 3)
    status, out = gpubot(["pending", "-A", "--scenario", str(generated), "--json"])
    assert status == ExitCode.FINDINGS, out
    answer = json.loads(out)["pending"]
    assert answer["bound"] == 3 and answer["diagnoses"] <= 3
    namespaces = {w["namespace"] for c in answer["causes"] for w in c["workloads"]}
    assert len(namespaces) > 1, "the generated cluster spreads stuck pods over namespaces"
    listed = [w for c in answer["causes"] for w in c["workloads"]] + answer["undiagnosed"]
    assert len(listed) == answer["workloads"], "every workload is a line, once"
    assert sum(w["pods"] for w in listed) == answer["stuck_pods"]
    assert answer["workloads"] > 3 and any(not w["diagnosed"] for w in listed)


class _Counting:
    """The real reader, counting the calls that reach it (what the memo saves)."""

    def __init__(self, inner: KubeReads) -> None:
        self.inner = inner
        self.events: list[tuple[str, str]] = []

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[dict[str, Any]]:
        self.events.append((namespace, field_selector))
        return await self.inner.list_events(namespace, field_selector=field_selector)


def test_each_event_read_is_made_once_and_field_selected(lab: ReadRig) -> None:
    """Two diagnoses asking about one pod's events share one call, and the call names the pod (a
    namespace's whole event list can be tens of thousands of events)."""
    from bot.service import Service

    async def read() -> tuple[list[tuple[str, str]], list[str], int, int]:
        service = Service(lab.sim.settings())
        try:
            reads = service.clients.for_cluster("").reads
            counting = _Counting(reads)
            shared = SharedReads(counting)  # type: ignore[arg-type]
            pods = await reads.list_pods("lab")
            names = [p["metadata"]["name"] for p in pods]
            asks = [shared.list_events("lab", field_selector=f"involvedObject.name={n}") for n in names * 2]
            batches = await asyncio.gather(*asks)
            direct = [await reads.list_events("lab", field_selector=f"involvedObject.name={n}") for n in names]
            return counting.events, names, sum(map(len, batches)), sum(map(len, direct))
        finally:
            await service.close()

    calls, names, shared_events, direct_events = asyncio.run(read())
    assert sorted(calls) == sorted(("lab", f"involvedObject.name={n}") for n in names)
    assert shared_events == 2 * direct_events > 0
