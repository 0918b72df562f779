"""Issue 28.1 and 31.3: a read that fails is never an answer, and the deadline is the deadline.

The zombie-checkpoint cluster, read as the CLI reads it, while one read fails in each way a real
API server fails: 401, 403, 429 and 500 (after the retries) and a server that accepts the request
and never answers, on the pod GET, the pod list, the node list and the event list; and the whole
API refused or failing TLS. For every cell ``why-pending`` and ``node-status``:

- conclude nothing from what they could not read: none of the "nothing there" conclusions
  (``POD_NOT_FOUND``, ``CHECKPOINT_ZOMBIE`` from "checked 0 pods", ``QGPU_NODE_NO_CAPACITY``,
  "No problem found") and no finding the complete answer does not have;
- offer no fix;
- open with what could not be read (the text verdict and the first finding), with the class of
  failure in JSON (``complete: false``, ``unreadable``);
- exit 3 (incomplete).

One simulator serves the whole module; each cell adds its fault at run time and clears it after.
The deadline tests run the real ``gpubot`` process (the deadline counts from its start) against a
server that never answers, one that answers slowly, and nodes that hang.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.engine.unreadable import CODES as READ_CODES
from bot.exit_codes import ExitCode
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario
from bot.sim.threaded import run_in_thread
from tests.exit_status import assert_answered
from tests.faults.read_rig import (
    ROOT,
    Answer,
    ReadRig,
    gpubot,
    gpubot_process,
    refused_url,
    start_cost_s,
    tls_url,
)

SCENARIO = ROOT / "scenarios" / "zombie-checkpoint.yaml"
POD, NAMESPACE = "gpu-full-5d8c6-q7wz2", "ai"
COMMANDS: dict[str, list[str]] = {
    "why-pending": ["why-pending", POD, "-n", NAMESPACE],
    "node-status": ["node-status"],
}
#: read -> (path fragment the fault matches, the resource the report must name, the findings of
#: the complete answer that rest on it and must go: "*" all of them). Lists always carry a query
#: (``limit``), so ``/pods?`` is every pod list and never the pod GET.
READS: dict[str, tuple[str, str, set[str]]] = {
    "pod GET": (f"/namespaces/{NAMESPACE}/pods/{POD}", "pods", {"*"}),
    "pod list": ("/pods?", "pods", {"CHECKPOINT_ZOMBIE", "LEAK_LOGICAL_NOT_PHYSICAL"}),
    # the scheduler's own message stands: it is read from the events, the nodes only sharpen it
    "node list": ("/nodes?", "nodes", {"CHECKPOINT_ZOMBIE", "LEAK_LOGICAL_NOT_PHYSICAL"}),
    "event list": ("/events?", "events", {"SCHED_QGPU_ALLOC_FAILED"}),
}
#: node-status asks about no pod: it makes no pod GET and lists no events
NOT_MADE = {("node-status", "pod GET"), ("node-status", "event list")}
#: fault -> (its knobs, the class of failure the report must give it)
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "401": ({"status": 401}, "unauthorized"),
    "403": ({"status": 403}, "forbidden"),
    "429": ({"status": 429}, "failed"),
    "500": ({"status": 500}, "failed"),
    "hang": ({"hang": True}, "timeout"),
}
#: conclusions drawn from an empty fact: never right when that fact could not be read
FROM_NOTHING = {"POD_NOT_FOUND", "CHECKPOINT_ZOMBIE", "QGPU_NODE_NO_CAPACITY", "LEAK_LOGICAL_NOT_PHYSICAL",
                "GPU_RESOURCE_NOT_ADVERTISED", "QGPU_OPERATOR_MISSING", "DEVICE_PLUGIN_NOT_RUNNING"}
#: a cell whose read hangs waits for the command's deadline: short, so the matrix stays fast, yet
#: long enough that the reads that do answer are in on a machine busy with other tests (these
#: cells assert what the report says, not when; the deadline tests below run alone)
HANG_DEADLINE_S = "2.5"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadRig]:
    workdir = tmp_path_factory.mktemp("reads")
    sim = SimCluster(load_scenario(SCENARIO), workdir=workdir / "sim")
    with run_in_thread(sim):
        yield ReadRig(sim, workdir)


@pytest.fixture(scope="module")
def config(rig: ReadRig) -> Path:
    return rig.config(ssh_deadline_s=5.0)


@pytest.fixture(scope="module")
def complete_codes(rig: ReadRig, config: Path) -> dict[str, set[str]]:
    """What each command finds when every read works: the most an incomplete answer may say."""
    out: dict[str, set[str]] = {}
    for name, argv in COMMANDS.items():
        rig.sim.api.faults.clear()
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):  # capsys is per test; this runs once per module
            code = main(["--config", str(config), *argv, "--json"])
        answer = json.loads(buf.getvalue())
        assert answer["complete"] is True
        assert_answered(code, answer)  # complete: 4 with the zombie's findings (exit_status.py)
        out[name] = {f["code"] for f in answer["findings"]}
    assert "CHECKPOINT_ZOMBIE" in out["node-status"], "the zombie is found when the pods can be read"
    return out


def assert_incomplete(answer: Answer, text: Answer, *, resource: str, kind: str, complete: set[str],
                      gone: set[str]) -> None:
    """The contract of every cell, on the JSON answer and on the text view: ``complete`` is what
    the complete answer finds, ``gone`` what of it rests on the failed read."""
    allowed = set() if "*" in gone else complete - gone
    assert answer.status == ExitCode.INCOMPLETE, answer.err
    report = answer.report
    assert report["complete"] is False
    failed = {(u["resource"] if "resource" in u else u["read"], u["error"]) for u in report["unreadable"]}
    assert (resource, kind) in failed, report["unreadable"]
    codes = [f["code"] for f in report["findings"]]
    assert codes and codes[0] in READ_CODES, codes
    concluded = set(codes) - set(READ_CODES)
    assert not concluded & (FROM_NOTHING - allowed), codes
    assert concluded <= allowed, f"invented from an unread input: {concluded - allowed}"
    assert all(f["remediations"] == [] for f in report["findings"]), "no fix is offered on an incomplete answer"
    # the text view says it first, naming what it could not read
    assert text.status == ExitCode.INCOMPLETE
    assert text.verdict.startswith("Incomplete: Could not read"), text.verdict
    assert resource in text.verdict.split(":", 2)[1], text.verdict
    assert "No problem found" not in text.out and "Fix, least invasive first" not in text.out  # no fix offered


CELLS = [
    pytest.param(command, read, fault, id=f"{command}-{read.replace(' ', '_')}-{fault}")
    for command in COMMANDS
    for read in READS
    for fault in FAULTS
    if (command, read) not in NOT_MADE
]


@pytest.mark.parametrize(("command", "read", "fault"), CELLS)
def test_a_failed_read_is_said_first_and_nothing_is_concluded_from_it(
    command: str,
    read: str,
    fault: str,
    rig: ReadRig,
    config: Path,
    complete_codes: dict[str, set[str]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    match, resource, gone = READS[read]
    knobs, kind = FAULTS[fault]
    if knobs.get("hang"):
        monkeypatch.setenv("GPUBOT_COMMAND_DEADLINE_S", HANG_DEADLINE_S)
    rig.sim.api.faults.clear()
    rig.sim.api.faults.add(ApiFault(match=match, verb="GET", **knobs))
    try:
        answer = gpubot(config, [*COMMANDS[command], "--json"], capsys)
        text = gpubot(config, COMMANDS[command], capsys)
        fired = [f for f in rig.sim.api.faults.fired if match in f[1]]
    finally:
        rig.sim.api.faults.clear()
    assert fired, f"{command} made no {read}"
    assert_incomplete(answer, text, resource=resource, kind=kind, complete=complete_codes[command], gone=gone)
    if kind == "forbidden":  # the refused read, and the rule that would grant it
        finding = answer.report["findings"][0]
        assert finding["code"] == "READ_FORBIDDEN"
        assert any(f'resources: ["{resource}"]' in step for step in finding["next_steps"]), finding["next_steps"]


@pytest.mark.parametrize(("command", "read"), sorted(NOT_MADE))
def test_a_read_the_command_does_not_make_does_not_touch_its_answer(
    command: str, read: str, rig: ReadRig, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    match = READS[read][0]
    rig.sim.api.faults.clear()
    rig.sim.api.faults.add(ApiFault(match=match, verb="GET", status=500))
    try:
        answer = gpubot(config, [*COMMANDS[command], "--json"], capsys)
    finally:
        rig.sim.api.faults.clear()
    assert answer.report["complete"] is True
    assert_answered(answer.status, answer.report)


def test_nodes_unread_because_their_pod_lists_hung_are_each_named(
    rig: ReadRig, config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """node-status whose per-node pod lists hang past the deadline: the node reads rest on them and
    are not taken; every GPU node is still named as not read, with why (issue 29, F9: a clean-clone
    run on a loaded machine showed 300 rows "not checked" and no node named)."""
    monkeypatch.setenv("GPUBOT_COMMAND_DEADLINE_S", HANG_DEADLINE_S)
    rig.sim.api.faults.clear()
    rig.sim.api.faults.add(ApiFault(match="/api/v1/pods?", verb="GET", hang=True))
    try:
        answer = gpubot(config, ["node-status", "--json"], capsys)
        text = gpubot(config, ["node-status"], capsys)
    finally:
        rig.sim.api.faults.clear()
    report = answer.report
    unread = {row["node"] for row in report["nodes"] if row["ssh"] != "ok"}
    named = {s["what"].removeprefix("physical checks on "): s["why"] for s in report["skipped"]
             if s["what"].startswith("physical checks on ")}
    assert unread == set(rig.sim.scenario.nodes) and set(named) == unread, report["skipped"]
    assert set(named.values()) == {"not read: it rests on pods on GPU nodes, which could not be read"}
    assert all(node in text.out for node in unread), text.out


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("broken", ["refused", "tls"])
def test_an_api_server_out_of_reach_is_the_whole_answer(
    command: str, broken: str, rig: ReadRig, capsys: pytest.CaptureFixture[str]
) -> None:
    server = refused_url() if broken == "refused" else tls_url(rig.sim)
    config = rig.config(f"broken-{broken}", server=server)
    rig.sim.api.faults.clear()
    answer = gpubot(config, [*COMMANDS[command], "--json"], capsys)
    text = gpubot(config, COMMANDS[command], capsys)
    report = answer.report
    assert answer.status == ExitCode.INCOMPLETE and report["complete"] is False
    assert [f["code"] for f in report["findings"]] == ["API_UNREACHABLE"]
    assert {u["error"] for u in report["unreadable"]} == {"unreachable" if broken == "refused" else "tls"}
    detail = report["unreadable"][0]["detail"]
    assert ("connection refused" in detail) if broken == "refused" else detail.startswith("TLS"), detail
    assert text.status == ExitCode.INCOMPLETE
    assert text.verdict.startswith("Incomplete: Could not read ") and server in text.verdict, text.verdict
    assert "No problem found" not in text.out
    assert "sim-token" not in text.out + answer.out + text.err, "the credentials never reach a report"


# ------------------------------------------------------------------ the deadline (issue 31.3)

#: the command deadline these tests give (issue 31.3 measured with 5 s and the default 20 s); the
#: answer is due 1 s after it, counted from the spawn. Two seconds leave a cold process more than
#: a second after its imports for the reads, and each test waits it out, alone on the machine
DEADLINE_S = 2.0
MARGIN_S = 1.0


@pytest.fixture
def deadline_s() -> float:
    """``DEADLINE_S``, or more on a machine so loaded that starting the process and importing the
    client alone take most of it: the deadline counts from the process's start, and a deadline the
    imports have used up tests nothing after them. Measured by starting the same imports, per test:
    a module-scoped measure was taken before the test held its exclusive lock, under the other
    workers' load, and stretched every deadline test here to 10 s while the workers waited."""
    return max(DEADLINE_S, 2 * start_cost_s() + 1.0)


def _process_env(deadline_s: float) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "GPUBOT_COMMAND_DEADLINE_S": f"{deadline_s:.1f}"}


def _in_time(took: float, deadline_s: float) -> None:
    assert took < deadline_s + MARGIN_S, f"answered after {took:.1f}s with a {deadline_s:.1f}s deadline"


@pytest.mark.exclusive  # a wall-clock assertion: alone, so another worker's load cannot fail it
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_server_that_never_answers_costs_the_deadline(
    command: str, rig: ReadRig, config: Path, deadline_s: float
) -> None:
    rig.sim.api.faults.clear()
    rig.sim.api.faults.add(ApiFault(match="/", hang=True))
    try:
        answer, took = gpubot_process(config, COMMANDS[command], env=_process_env(deadline_s), guard_s=60)
    finally:
        rig.sim.api.faults.clear()
    assert answer.status == ExitCode.INCOMPLETE, answer.err
    assert answer.verdict.startswith("Incomplete: Could not read"), answer.out
    _in_time(took, deadline_s)


@pytest.mark.exclusive  # a wall-clock assertion: alone, so another worker's load cannot fail it
def test_a_slow_server_gives_what_it_had_by_the_deadline(rig: ReadRig, config: Path, deadline_s: float) -> None:
    rig.sim.api.faults.clear()
    rig.sim.api.faults.add(ApiFault(match="/", delay_s=deadline_s / 3))  # slower than it has time for
    try:
        answer, took = gpubot_process(config, COMMANDS["why-pending"], env=_process_env(deadline_s), guard_s=60)
    finally:
        rig.sim.api.faults.clear()
    _in_time(took, deadline_s)
    assert answer.status in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.INCOMPLETE), answer.err
    if answer.status == ExitCode.INCOMPLETE:  # what did not come back in time is named, not guessed
        assert answer.verdict.startswith("Incomplete: Could not read"), answer.out
        assert "POD_NOT_FOUND" not in answer.out


@pytest.mark.exclusive  # a wall-clock assertion: alone, so another worker's load cannot fail it
def test_hanging_nodes_cost_the_deadline_and_are_named(tmp_path: Path, deadline_s: float) -> None:
    scenario = load_scenario(SCENARIO)
    for node in scenario.nodes.values():
        node.ssh = "timeout"  # the SSH port accepts and never says a byte
    sim = SimCluster(scenario, workdir=tmp_path / "sim")
    with run_in_thread(sim):
        config = ReadRig(sim, tmp_path).config(ssh_deadline_s=30.0)
        answer, took = gpubot_process(config, COMMANDS["node-status"], env=_process_env(deadline_s), guard_s=60)
    _in_time(took, deadline_s)
    # the API was read in full (complete; the zombie's findings: 4); the nodes are named
    assert answer.status == ExitCode.FINDINGS, answer.err
    skipped = answer.out.split("\nSkipped:\n", 1)[1]
    for node in scenario.nodes:  # each hung node named as not read (its own timeout, cut to the deadline)
        assert f"physical checks on {node}: ssh timeout" in skipped or node in skipped.split("deadline")[0], skipped
    assert "CHECKPOINT_ZOMBIE" not in answer.out, "no conclusion from nodes that were not read"


@pytest.mark.exclusive  # a wall-clock assertion: alone, so another worker's load cannot fail it
def test_a_credential_plugin_that_never_returns_costs_the_deadline(rig: ReadRig, deadline_s: float) -> None:
    """The kubeconfig's exec plugin runs when the client is built, without a timeout of its own."""
    # longer than the command may take; it ends on its own a little later (gpubot does not wait for it)
    config = rig.config("stuck-plugin", credential_plugin=["sleep", str(int(deadline_s + MARGIN_S) + 5)])
    answer, took = gpubot_process(config, COMMANDS["why-pending"], env=_process_env(deadline_s), guard_s=60)
    _in_time(took, deadline_s)
    assert answer.status == ExitCode.INCOMPLETE, answer.err
    assert answer.verdict.startswith("Incomplete: Could not read"), answer.out
    assert "API_UNREACHABLE" in answer.out and "POD_NOT_FOUND" not in answer.out
