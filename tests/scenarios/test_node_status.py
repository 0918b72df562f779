"""node-status, nvml and verify end to end: the real CLI (or Service) against the simulator.

Each test reads a scenario file from ``scenarios/`` and runs the command over real HTTP, SSH
and exec WebSocket connections. The read-only tests drive ``SimCluster`` + ``Service`` directly
so they can look at what the simulator recorded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.commands import parse_invocation
from bot.probes.exec import EXEC_COMMANDS
from bot.probes.ssh import READ_COMMANDS
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import ApiFault, load_scenario, scenario_from_dict
from bot.synth.generate import generate_scenario
from tests.exit_status import assert_answered

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
CONTRACT = {"command", "target", "findings", "skipped", "elapsed_ms"}
POD = "torch-job-6b8d9-x7k2p"

Report = dict[str, Any]


def run_cli(capsys: pytest.CaptureFixture[str], scenario: str, *argv: str) -> Report:
    code = main([*argv, "--scenario", str(SCENARIOS / scenario), "--json"])
    out, err = capsys.readouterr()
    report: Report = json.loads(out)
    assert_answered(code, report)
    assert set(report) >= CONTRACT
    return report


def codes(report: Report) -> list[str]:
    return [f["code"] for f in report["findings"]]


def findings(report: Report, code: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"] == code]


def row(report: Report, node: str) -> dict[str, Any]:
    return next(r for r in report["nodes"] if r["node"] == node)


def offers(finding: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    return [(r["action"], r["params"]) for r in finding["remediations"]]


# ------------------------------------------------------------------------------ node-status


def test_healthy_cluster_raises_no_false_alarm(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "tce-qgpu-healthy.yaml", "node-status")
    assert {"GPU_BUSY", "GPU_IDLE", "QGPU_CORE_OVER_QUOTA"} <= set(codes(report))
    assert not {"LEAK_LOGICAL_NOT_PHYSICAL", "CHECKPOINT_ZOMBIE", "NODE_UNREACHABLE", "NODE_NOT_READY"} & set(
        codes(report)
    )
    assert {f["severity"] for f in report["findings"]} == {"info"}
    assert report["skipped"] == []
    assert [r["node"] for r in report["nodes"]] == ["tcs-10-29-25-5", "tcs-10-29-25-6"]
    busy = row(report, "tcs-10-29-25-5")
    assert busy["ready"] is True and busy["cordoned"] is False and busy["ssh"] == "ok"
    assert busy["logical"]["tke.cloud.tencent.com/qgpu-core"] == {
        "capacity": 200.0, "allocatable": 200.0, "requested": 20.0,
    }
    assert [(g["index"], g["verdict"], g["processes"]) for g in busy["gpus"]] == [(0, "busy", 1), (1, "idle", 0)]
    assert busy["gpus"][0]["pods"] == ["ai/gpu-demo-6c9f7d-tx2lq"]
    assert busy["gpus"][0]["temperature_c"] == 48 and busy["gpus"][0]["power_w"] == 85.2
    assert any("qgpu-manager" in c and "[Running]" in c for c in busy["components"])
    assert busy["pods"] == ["ai/gpu-demo-6c9f7d-tx2lq [Running] qgpu-core=20, qgpu-memory=16"]
    quota = findings(report, "QGPU_CORE_OVER_QUOTA")[0]
    assert "23%" in quota["title"] and "20%" in quota["title"]
    assert any("inferred" in e for e in quota["evidence"])  # says how the card was matched


def test_leak_is_reported_on_the_idle_node_only(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "leak.yaml", "node-status")
    leak = findings(report, "LEAK_LOGICAL_NOT_PHYSICAL")
    assert [f["title"] for f in leak] == [
        "GPU resources on gpu-a are allocated in Kubernetes but the cards are idle"
    ]
    assert ("kubelet.restart", {"node": "gpu-a"}) in offers(leak[0])
    assert ("checkpoint.clear", {"node": "gpu-a"}) in offers(leak[0])
    assert "gpu-b" in findings(report, "ALLOCATION_REAL")[0]["title"]
    assert row(report, "gpu-a")["logical"]["nvidia.com/gpu"]["requested"] == 0
    assert [g["verdict"] for g in row(report, "gpu-b")["gpus"]] == ["busy", "idle"]
    assert any("nvidia-device-plugin" in c for c in row(report, "gpu-a")["components"])

    narrowed = run_cli(capsys, "leak.yaml", "node-status", "gpu-b")
    assert [r["node"] for r in narrowed["nodes"]] == ["gpu-b"]
    assert narrowed["target"] == {"nodes": ["gpu-b"]}
    assert "LEAK_LOGICAL_NOT_PHYSICAL" not in codes(narrowed)


@pytest.mark.parametrize(
    ("scenario", "node", "fmt", "dead_uid"),
    [
        ("zombie-checkpoint.yaml", "tcs-10-29-25-5", "v2", "00000385-7a1e-4c2b-9d3f-000000000385"),
        ("zombie-checkpoint-v1.yaml", "k118-gpu-1", "v1", "dead0000-0000-4000-8000-000000000011"),
    ],
    ids=["numa-map", "v1-list"],
)
def test_zombie_checkpoint_in_both_formats(
    capsys: pytest.CaptureFixture[str], scenario: str, node: str, fmt: str, dead_uid: str
) -> None:
    report = run_cli(capsys, scenario, "node-status")
    zombie = next(f for f in findings(report, "CHECKPOINT_ZOMBIE") if node in f["title"])
    text = "\n".join(zombie["evidence"])
    assert dead_uid in text and f"checkpoint format {fmt}" in text
    assert ("kubelet.restart", {"node": node}) in offers(zombie)
    assert "NODE_UNREACHABLE" not in codes(report)


def test_zombie_v1_leaves_the_live_allocation_alone(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "zombie-checkpoint-v1.yaml", "node-status")
    zombie = findings(report, "CHECKPOINT_ZOMBIE")
    assert len(zombie) == 1 and "1 pod(s)" in zombie[0]["title"]
    assert "GPU-c3c3c3c3-0000-4000-8000-000000000001" in "\n".join(zombie[0]["evidence"])
    assert "9e000000-0000-4000-8000-000000000011" not in "\n".join(zombie[0]["evidence"])
    assert row(report, "k118-gpu-1")["gpus"][0]["pods"] == ["vision/detector-0"]


def test_terminating_holder_cordoned_and_not_ready_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "terminating-holder-cordoned.yaml", "node-status")
    holder = findings(report, "TERMINATING_HOLDS_GPU")[0]
    assert ("pod.delete", {"namespace": "research", "pod": "finetune-0"}) in offers(holder)
    assert row(report, "gpu-maint-1")["pods"] == ["research/finetune-0 [Terminating] gpu=1"]
    cordoned = findings(report, "NODE_CORDONED")[0]
    assert offers(cordoned) == [("node.uncordon", {"node": "gpu-maint-1"})]
    assert row(report, "gpu-maint-1")["taints"] == ["node.kubernetes.io/unschedulable:NoSchedule"]
    not_ready = findings(report, "NODE_NOT_READY")[0]
    assert "NodeStatusUnknown" in not_ready["title"]
    assert any("kubelet on the node: inactive" in e for e in not_ready["evidence"])
    assert offers(not_ready) == [("kubelet.restart", {"node": "gpu-maint-2"})]
    assert row(report, "gpu-maint-2")["ready"] is False


def test_unreachable_and_wrong_host_key_nodes_do_not_hide_the_healthy_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the faults are SSH's (refused, a rebuilt host key): read over SSH, as the scenario means
    report = run_cli(capsys, "unreachable-node.yaml", "node-status", "--node-access", "ssh")
    unreachable = {f["title"] for f in findings(report, "NODE_UNREACHABLE")}
    assert unreachable == {
        "Cannot reach node gpu-refused over SSH (refused); its physical checks were skipped",
        "Cannot reach node gpu-rekeyed over SSH (host-key); its physical checks were skipped",
    }
    assert {s["what"] for s in report["skipped"]} >= {
        "physical checks on gpu-refused", "physical checks on gpu-rekeyed",
    }
    assert [r["node"] for r in report["nodes"]] == ["gpu-ok-1", "gpu-ok-2", "gpu-refused", "gpu-rekeyed"]
    assert [r["ssh"] for r in report["nodes"]] == ["ok", "ok", "refused", "host-key"]
    for name in ("gpu-refused", "gpu-rekeyed"):
        assert row(report, name)["gpus"] == []
        assert row(report, name)["logical"]["nvidia.com/gpu"]["capacity"] == 2
    busy = row(report, "gpu-ok-1")["gpus"][0]
    assert busy["power_w"] is None and busy["verdict"] == "busy"  # power reads [Not Supported]
    blank = row(report, "gpu-ok-2")["gpus"][1]
    assert blank["temperature_c"] is None and blank["utilization"] is None
    assert {"GPU_BUSY", "GPU_IDLE", "ALLOCATION_REAL"} <= set(codes(report))


def test_an_unknown_node_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "leak.yaml", "node-status", "gpu-c")
    assert codes(report) == ["NODE_NOT_FOUND"]
    assert "gpu-a, gpu-b" in "\n".join(findings(report, "NODE_NOT_FOUND")[0]["next_steps"])


def test_a_bad_node_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["node-status", "gpu-a;reboot", "--scenario", str(SCENARIOS / "leak.yaml"), "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------ nvml / verify


def test_nvml_lost_with_skew_and_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "nvml-unknown-error.yaml", "nvml", "gpu-demo-6c9f7d-tx2lq", "-n", "ai")
    lost = findings(report, "NVML_CGROUP_LOST")[0]
    assert lost["severity"] == "critical"
    text = "\n".join(lost["evidence"])
    assert "Failed to initialize NVML: Unknown Error" in text
    assert "/dev/nvidia0" in text and "2026-05-09T03:15:27" in text
    assert "skew" in text and "1d 17h 33m" in text and "1d 17h 33m" in lost["explanation"]
    assert offers(lost) == [("pod.delete", {"namespace": "ai", "pod": "gpu-demo-6c9f7d-tx2lq"})]
    steps = "\n".join(lost["next_steps"])
    assert "no-cgroups = true" in steps and "nvidia-ctk system create-dev-char-symlinks" in steps
    assert "CONTAINER_GPU_OK" not in codes(report)


@pytest.mark.parametrize(
    ("scenario", "present", "absent"),
    [
        ("torch-cpu-build.yaml", {"TORCH_CPU_BUILD"}, {"DRIVER_TOO_OLD", "CONTAINER_GPU_OK", "PID1_SHELL"}),
        ("pid1-shell.yaml", {"PID1_SHELL", "CONTAINER_GPU_OK"}, {"TORCH_CPU_BUILD", "DRIVER_TOO_OLD"}),
        ("driver-too-old.yaml", {"DRIVER_TOO_OLD"}, {"TORCH_CPU_BUILD", "CONTAINER_GPU_OK"}),
        ("operator-driver.yaml", {"CONTAINER_GPU_OK"}, {"DRIVER_TOO_OLD", "NODE_UNREACHABLE"}),
    ],
)
def test_verify_chain(capsys: pytest.CaptureFixture[str], scenario: str, present: set[str], absent: set[str]) -> None:
    report = run_cli(capsys, scenario, "verify", POD, "-n", "ai")
    assert present <= set(codes(report)), codes(report)
    assert not absent & set(codes(report)), codes(report)
    text = json.dumps(report)
    # informational chain: torch, devices, driver, GPU env, PID 1; other variables never shown
    for needle in ("torch 2.", "device files: nvidia-uvm, nvidia0, nvidiactl", "NVIDIA_VISIBLE_DEVICES=", "PID 1:"):
        assert needle in text
    assert "API_TOKEN" not in text and "s3cr3t" not in text


def test_driver_too_old_compares_versions_numerically(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "driver-too-old.yaml", "verify", POD, "-n", "ai")
    old = findings(report, "DRIVER_TOO_OLD")[0]
    assert old["title"] == "Node driver 470.82.01 supports CUDA 11.4, older than the container's CUDA 12.1"
    assert any("over SSH" in e for e in old["evidence"])


def test_exec_commands_on_a_pending_pod_are_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "ns-policy-missing.yaml", "verify", "train-7b4d9-k2x8p", "-n", "ml-team")
    assert any(s["what"].startswith("exec into") and "Pending" in s["why"] for s in report["skipped"])
    assert not {"CONTAINER_GPU_OK", "TORCH_CPU_BUILD", "NVML_CGROUP_LOST"} & set(codes(report))


def test_missing_pod(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_cli(capsys, "pid1-shell.yaml", "nvml", "torch-job", "-n", "ai")
    assert codes(report) == ["POD_NOT_FOUND"]


# ------------------------------------------------------------------------------ read-only


READ_ONLY_RUNS = [
    ("tce-qgpu-healthy.yaml", ["node-status"]),
    ("leak.yaml", ["node-status"]),
    ("zombie-checkpoint-v1.yaml", ["node-status"]),
    ("terminating-holder-cordoned.yaml", ["node-status"]),
    ("unreachable-node.yaml", ["node-status"]),
    ("operator-driver.yaml", ["node-status"]),
    ("operator-driver.yaml", ["verify", POD, "-n", "ai"]),
    ("nvml-unknown-error.yaml", ["nvml", "gpu-demo-6c9f7d-tx2lq", "-n", "ai"]),
    ("nvml-unknown-error.yaml", ["verify", "gpu-demo-6c9f7d-tx2lq", "-n", "ai"]),
    ("torch-cpu-build.yaml", ["verify", POD, "-n", "ai"]),
    ("pid1-shell.yaml", ["nvml", POD, "-n", "ai"]),
    ("driver-too-old.yaml", ["verify", POD, "-n", "ai"]),
]


@pytest.mark.parametrize(("scenario", "argv"), READ_ONLY_RUNS, ids=[f"{s}:{a[0]}" for s, a in READ_ONLY_RUNS])
async def test_commands_are_read_only(scenario: str, argv: list[str]) -> None:
    async with SimCluster.from_file(SCENARIOS / scenario) as sim:
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(argv))
        finally:
            await service.close()
        assert report.findings
        assert sim.api.writes == []
        if argv[0] != "nvml":
            assert sim.ssh.command_log, "node-status/verify must have looked at a node"
        assert all(r.allowed for r in sim.ssh.command_log)
        assert {r.command for r in sim.ssh.command_log} <= READ_COMMANDS
        allowed_argv = {tuple(v) for v in EXEC_COMMANDS.values()}
        assert {tuple(entry[3]) for entry in sim.api.exec_log} <= allowed_argv
        if argv[0] != "node-status":
            assert sim.api.exec_log, "nvml/verify must have looked inside the container"


async def test_operator_managed_driver_is_read_through_chroot() -> None:
    async with SimCluster.from_file(SCENARIOS / "operator-driver.yaml") as sim:
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(["node-status"]))
        finally:
            await service.close()
        commands = [(r.command, r.exit_status) for r in sim.ssh.command_log]
    assert any(c.startswith("nvidia-smi --query-gpu") and code == 127 for c, code in commands)
    assert any(c.startswith("chroot /run/nvidia/driver nvidia-smi --query-gpu") and code == 0 for c, code in commands)
    (only,) = report.nodes
    assert only.driver_path == "operator" and only.cuda == "12.4"
    assert [g.verdict for g in only.gpus] == ["busy", "idle"]
    assert any("nvidia-driver-daemonset" in c for c in only.components)


async def test_a_silent_node_among_twenty_costs_one_deadline() -> None:
    data = generate_scenario(nodes=20, gpu_nodes=20, pods=60, seed=4, silent_nodes=1, zombies=0, leaks=0)
    scenario = scenario_from_dict(data, source="generated:20-nodes-1-silent")
    silent = [n for n, f in scenario.nodes.items() if f.ssh == "timeout"]
    assert len(silent) == 1
    # long enough that a healthy node's handshake and reads fit on a loaded CI machine (at 2 s,
    # healthy nodes timed out there too); a silent node that cost two deadlines would still show
    deadline = 8.0
    async with SimCluster(scenario) as sim:
        service = Service(sim.settings(ssh_deadline_s=deadline))
        try:
            await service.start()  # the clients (and their one-time imports) are not the node reads
            started = time.monotonic()
            report = await service.run(parse_invocation(["node-status"]))
            elapsed = time.monotonic() - started
        finally:
            await service.close()
    assert elapsed < deadline + 4.0, f"took {elapsed:.1f}s with a {deadline}s per-node deadline"
    assert len(report.nodes) == 20
    assert sorted(r.node for r in report.nodes if r.ssh == "timeout") == silent
    assert all(r.gpus for r in report.nodes if r.ssh == "ok")
    assert [f.title for f in report.findings if f.code == "NODE_UNREACHABLE"] == [
        f"Cannot reach node {silent[0]} over SSH (timeout); its physical checks were skipped"
    ]


def test_every_issue_scenario_declares_its_expectations() -> None:
    mine = ["leak", "zombie-checkpoint-v1", "terminating-holder-cordoned", "unreachable-node", "torch-cpu-build",
            "pid1-shell", "operator-driver", "driver-too-old"]
    for name in mine:
        scenario = load_scenario(SCENARIOS / f"{name}.yaml")
        assert scenario.name == name and scenario.expect, name


async def test_exec_failures_become_skipped_entries() -> None:
    """The API refuses every exec (500): the report says so and still stands."""
    async with SimCluster.from_file(SCENARIOS / "pid1-shell.yaml") as sim:
        sim.api.faults.add(ApiFault(match="/exec", status=500))
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(["verify", POD, "-n", "ai"]))
        finally:
            await service.close()
        assert sim.api.faults.fired
    assert [s.what for s in report.skipped] == [f"exec into ai/{POD}/torch"]
    assert not {"CONTAINER_GPU_OK", "PID1_SHELL", "TORCH_CPU_BUILD"} & set(report.codes())


async def test_verify_on_an_unreachable_node_reads_cuda_from_the_container() -> None:
    scenario = load_scenario(SCENARIOS / "driver-too-old.yaml")
    scenario.nodes["gpu-node-1"].ssh = "unreachable"
    async with SimCluster(scenario) as sim:
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(["verify", POD, "-n", "ai"]))
        finally:
            await service.close()
    assert {"DRIVER_TOO_OLD", "NODE_UNREACHABLE"} <= set(report.codes())
    old = next(f for f in report.findings if f.code == "DRIVER_TOO_OLD")
    assert any("as nvidia-smi inside the container prints it" in e for e in old.evidence)


async def test_the_command_deadline_bounds_a_fleet_with_many_hung_nodes() -> None:
    """30 of 60 nodes hang: the answer still comes within the command deadline (+1 s), naming what
    it could not read; nodes read before the deadline keep their rows."""
    data = generate_scenario(nodes=60, gpu_nodes=60, pods=120, seed=7, silent_nodes=30, zombies=0, leaks=0)
    scenario = scenario_from_dict(data, source="generated:60-nodes-30-silent")
    command_deadline = 3.0
    async with SimCluster(scenario) as sim:
        service = Service(sim.settings(ssh_deadline_s=2.0, ssh_concurrency=8, command_deadline_s=command_deadline))
        try:
            await service.start()  # the clients (and their one-time imports) are not the command
            started = time.monotonic()
            report = await service.run(parse_invocation(["node-status"]))
            elapsed = time.monotonic() - started
        finally:
            await service.close()
    assert elapsed < command_deadline + 1.0, f"took {elapsed:.1f}s with a {command_deadline}s command deadline"
    assert len(report.nodes) == 60
    # every node not read is named, one entry each, with its reason (its own timeout, or the
    # command's deadline for one whose turn never came)
    unread = {r.node for r in report.nodes if r.ssh != "ok"}
    named = [s.node for s in report.skipped if s.node]
    assert sorted(named) == sorted(unread) and len(unread) >= 30
    assert any(r.ssh == "ok" and r.gpus for r in report.nodes)
    assert not any(f.code == "NODE_UNREACHABLE" and "deadline" in f.title for f in report.findings)


@pytest.mark.parametrize(
    "scenario",
    [
        "tce-qgpu-healthy.yaml", "leak.yaml", "zombie-checkpoint.yaml", "gpu-unhealthy-xid94-h100.yaml",
        "xid79-fallen-off-bus-rtx4090.yaml", "plugin-nvml-crashloop-k8s124.yaml", "lab-mixed-k8s131.yaml",
        "terminating-holder-cordoned.yaml", "unreachable-node.yaml", "mig-mixed-healthy-k8s131.yaml",
    ],
)
def test_checks_worked_out_as_the_nodes_answer_say_what_they_say_worked_out_after(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    """The checks' per-node parts (``bot.engine.per_node``), worked out as each node answers and
    taken at the end where the reading is the very one, give the report of the parts all worked
    out after the fan-out; and they were taken, not worked out again."""
    from bot.engine import per_node, runner

    taken: list[str] = []
    call = per_node.PerNode.__call__

    def counted(self: per_node.PerNode[Any], facts: Any, node: str, reading: Any) -> Any:
        value = call(self, facts, node, reading)
        kept = (facts.beside(per_node.EARLY_PER_NODE) or {}).get((self, node))
        taken.extend([node] if kept is not None and kept[2] is value else [])
        return value

    monkeypatch.setattr(per_node.PerNode, "__call__", counted)
    early = run_cli(capsys, scenario, "node-status")
    assert taken, "no part was worked out as its node answered"
    monkeypatch.setattr(runner, "parts_of", lambda checks: [])
    late = run_cli(capsys, scenario, "node-status")
    for report in (early, late):
        report.pop("elapsed_ms")
    assert early == late


def test_the_findings_of_a_nodes_parts_are_worded_as_it_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPU_BUSY and ALLOCATION_REAL of a node come from its parts, so they are worded as it answers
    (``EARLY_WORDS``): the report's findings are those very objects, in the report's own order."""
    from bot.engine import runner

    taken: list[str] = []
    word = runner.word

    def counted(detections: Any, runbooks: Any, extra: Any, *, early: Any = None) -> Any:
        findings = word(detections, runbooks, extra, early=early)
        worded = [kept[1] for kept in (early or {}).values()]
        taken.extend(f.code for f in findings if any(f is w for w in worded))
        return findings

    monkeypatch.setattr(runner, "word", counted)
    report = run_cli(capsys, "leak.yaml", "node-status")
    assert {"GPU_BUSY", "ALLOCATION_REAL", "LEAK_LOGICAL_NOT_PHYSICAL"} <= set(taken)
    assert "gpu-b" in findings(report, "ALLOCATION_REAL")[0]["title"]
