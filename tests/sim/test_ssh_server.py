"""The simulated SSH nodes, driven through asyncssh with the bot's strict client."""

from __future__ import annotations

import re
import time
from pathlib import Path

import asyncssh
import pytest

from bot.errors import NodeProbeError
from bot.probes.ssh import (
    COMBINED_READ,
    FIRST_READS,
    KUBELET_ACTIVE,
    READ_COMMANDS,
    SshTarget,
    open_connection,
    run_command,
    split_reads,
)
from bot.sim.scenario import GpuFacts, NodeFacts, load_scenario
from bot.sim.ssh_server import CHECKPOINT
from tests.conftest import StartFleet
from tests.probes import many_nodes, node_dict, scenario_of, targets_of

SCENARIOS = sorted(Path(__file__).resolve().parents[2].joinpath("scenarios").glob("*.yaml"))

GPU_CSV = (
    "nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,"
    "temperature.gpu,power.draw,memory.free --format=csv"
)
APPS_CSV = "nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid,gpu_name --format=csv"
BACKUP = CHECKPOINT + ".bak-20260508T101500.123456789Z-Ab3_x9QkLm2P"



async def run(target: SshTarget, command: str) -> tuple[str, str, int]:
    """Run any command (tests only: bypasses the allow-list on purpose) over the strict client."""
    conn = await open_connection(target, timeout=5)
    async with conn:
        return await run_on(conn, target, command)


async def run_on(conn: asyncssh.SSHClientConnection, target: SshTarget, command: str) -> tuple[str, str, int]:
    """``run`` on a connection already open to ``target`` (several commands, one handshake)."""
    result = await run_command(conn, command, allowed=frozenset({command}), node=target.node)
    return result.stdout, result.stderr, result.exit_status


def expected_row(g: GpuFacts) -> str:
    def n(v: float | None, unit: str) -> str:
        return "[N/A]" if v is None else f"{int(round(v))} {unit}".strip()

    # nvidia-smi cannot compute free memory when it does not know used or total (GB10's unified
    # memory reports neither): [N/A], like the other unknown fields.
    unknown = g.memory_total_mib is None or g.memory_used_mib is None
    free = None if unknown else (g.memory_total_mib or 0) - (g.memory_used_mib or 0)
    power = "[N/A]" if g.power_w is None else f"{g.power_w:.2f} W"
    # A scenario may print a field as the driver would ("[Not Supported]"), keyed either way.
    power = g.raw.get("power.draw", g.raw.get("power_w", power))
    return ", ".join(
        [
            str(g.index),
            g.uuid,
            g.name,
            n(g.utilization_gpu, "%"),
            n(g.memory_used_mib, "MiB"),
            n(g.memory_total_mib, "MiB"),
            n(g.temperature_c, ""),
            power,
            n(free, "MiB"),
        ]
    )


async def check_node_reads(conn: asyncssh.SSHClientConnection, target: SshTarget, facts: NodeFacts) -> None:
    """One node's nvidia-smi CSV, compute apps, summary and checkpoint, as its facts say, on one
    connection (as the probes hold one: a handshake per command was most of this file)."""
    prefix = "chroot /run/nvidia/driver " if facts.driver_install == "operator" else ""
    out, err, rc = await run_on(conn, target, prefix + GPU_CSV)
    lost = [g for g in facts.gpus if g.lost]
    if lost:
        # a card without a handle: the real tool prints only that, and fails
        assert rc in (15, 255) and err == ""
        gap = "" if int(facts.driver.split(".")[0]) >= 525 else " "
        assert [line.split(":", 1)[0] for line in out.splitlines()] == [
            f"Unable to determine the device handle for GPU{gap}0000"
        ] * len(lost)
        return
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (
        "index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
        "temperature.gpu, power.draw [W], memory.free [MiB]"
    )
    assert lines[1:] == [expected_row(g) for g in facts.gpus]

    out, _, rc = await run_on(conn, target, prefix + APPS_CSV)
    assert rc == 0
    names = {g.uuid: g.name for g in facts.gpus}
    assert out.splitlines() == ["pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_name"] + [
        f"{p.pid}, {p.name}, {int(p.used_memory_mib or 0)} MiB, {p.gpu_uuid}, {names[p.gpu_uuid]}"
        for p in facts.processes
    ]

    out, _, rc = await run_on(conn, target, prefix + "nvidia-smi")
    assert rc == 0
    assert f"Driver Version: {facts.driver}" in out and f"CUDA Version: {facts.cuda}" in out
    if not facts.processes:
        assert "No running processes found" in out

    out, _, rc = await run_on(conn, target, f"cat {CHECKPOINT}")
    assert (out if facts.checkpoint is not None else None, rc) == (
        facts.checkpoint,
        0 if facts.checkpoint is not None else 1,
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_every_scenario_serves_its_numbers_in_nvidia_smi_format(
    path: Path, start_fleet: StartFleet
) -> None:
    scenario = load_scenario(path)
    fleet = await start_fleet(scenario)
    targets = targets_of(fleet)
    assert set(targets) == set(scenario.nodes)
    for node, facts in scenario.nodes.items():
        if facts.ssh == "ok":
            async with await open_connection(targets[node], timeout=5) as conn:
                await check_node_reads(conn, targets[node], facts)
    assert all(r.allowed for r in fleet.command_log)


async def test_noheader_nounits_and_raw_overrides(start_fleet: StartFleet) -> None:
    gpu = {
        "index": 0,
        "uuid": "GPU-x",
        "name": "A10",
        "utilization_gpu": None,
        "memory_used_mib": 5,
        "memory_total_mib": 24576,
        "temperature_c": 40,
        "power_w": 55.5,
        "raw": {"power.draw": "[Not Supported]", "temperature_c": "[Unknown Error]"},
    }
    fleet = await start_fleet(scenario_of({"n1": node_dict(1, gpus=[gpu], processes=[])}))
    target = targets_of(fleet)["n1"]
    out, _, rc = await run(
        target,
        "nvidia-smi --query-gpu=index,utilization.gpu,memory.used,temperature.gpu,power.draw "
        "--format=csv,noheader,nounits",
    )
    assert (out, rc) == ("0, [N/A], 5, [Unknown Error], [Not Supported]\n", 0)
    out, _, rc = await run(target, "nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader")
    assert (out, rc) == ("", 0)


async def test_unknown_query_field_fails_like_the_real_tool(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    out, _, rc = await run(
        targets_of(fleet)["node-000"], "nvidia-smi --query-gpu=index,cuda_version --format=csv"
    )
    assert (out, rc) == ('Field "cuda_version" is not a valid field to query.\n\n', 2)


async def test_list_and_xml(start_fleet: StartFleet) -> None:
    import xml.etree.ElementTree as ET

    fleet = await start_fleet(many_nodes(1))
    target = targets_of(fleet)["node-000"]
    out, _, rc = await run(target, "nvidia-smi -L")
    assert (out, rc) == ("GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-00000000-0000-4000-8000-000000000000)\n", 0)
    out, _, rc = await run(target, "nvidia-smi -q -x")
    root = ET.fromstring(out.split("\n", 2)[2])
    assert rc == 0 and root.findtext("gpu/uuid") == "GPU-00000000-0000-4000-8000-000000000000"


async def test_host_key_mismatch_is_refused_by_the_strict_client(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(2, {1: {"ssh": "wrong-host-key"}}))
    targets = targets_of(fleet)
    with pytest.raises(NodeProbeError) as info:
        await open_connection(targets["node-001"], timeout=5)
    assert info.value.reason == "host-key"
    # the other node, same known_hosts file, is fine: the mismatch is per node
    conn = await open_connection(targets["node-000"], timeout=5)
    conn.close()
    assert fleet.command_log == []


async def test_auth_denied_unreachable_and_timeout(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(
        many_nodes(3, {0: {"ssh": "auth-denied"}, 1: {"ssh": "unreachable"}, 2: {"ssh": "timeout"}})
    )
    targets = targets_of(fleet)
    reasons = {}
    for node in ("node-000", "node-001"):
        with pytest.raises(NodeProbeError) as info:
            await open_connection(targets[node], timeout=5)
        reasons[node] = info.value.reason
    assert reasons == {"node-000": "auth", "node-001": "refused"}
    started = time.monotonic()
    with pytest.raises(NodeProbeError) as info:
        await open_connection(targets["node-002"], timeout=0.5)
    assert info.value.reason == "timeout"
    assert time.monotonic() - started < 2.0


async def test_other_users_and_other_keys_are_rejected(start_fleet: StartFleet, tmp_path: Path) -> None:
    fleet = await start_fleet(many_nodes(1))
    target = targets_of(fleet)["node-000"]
    with pytest.raises(NodeProbeError) as info:
        await open_connection(SshTarget(**{**target.__dict__, "user": "root"}), timeout=5)
    assert info.value.reason == "auth"
    other = tmp_path / "other_key"
    other.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    with pytest.raises(NodeProbeError) as info:
        await open_connection(SshTarget(**{**target.__dict__, "key_path": str(other)}), timeout=5)
    assert info.value.reason == "auth"


@pytest.mark.parametrize(
    "command",
    [
        "reboot",
        "nvidia-smi; reboot",
        "cat /etc/shadow",
        "nvidia-smi -L && rm -rf /",
        "echo $(id)",
        "chroot / sh",
    ],
)
async def test_unknown_commands_exit_127_and_are_recorded(command: str, start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    out, err, rc = await run(targets_of(fleet)["node-000"], command)
    assert (out, rc) == ("", 127)
    assert re.fullmatch(r"bash: \S+: command not found\n", err)
    assert [(r.node, r.command, r.exit_status, r.allowed) for r in fleet.command_log] == [
        ("node-000", command, 127, False)
    ]


async def test_operator_driver_node(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(2, {0: {"driver_install": "operator"}}))
    targets = targets_of(fleet)
    assert await run(targets["node-000"], "nvidia-smi -L") == (
        "",
        "bash: nvidia-smi: command not found\n",
        127,
    )
    out, _, rc = await run(targets["node-000"], "chroot /run/nvidia/driver nvidia-smi -L")
    assert rc == 0 and out.startswith("GPU 0: Tesla V100-SXM2-32GB")
    _, err, rc = await run(targets["node-001"], "chroot /run/nvidia/driver nvidia-smi -L")
    assert rc == 125 and "No such file or directory" in err


async def test_files_kubelet_and_driver_version(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(2, {1: {"checkpoint": None, "kubelet": "failed", "dev_nvidia": []}}))
    targets = targets_of(fleet)
    out, _, rc = await run(targets["node-000"], "ls -l --time-style=full-iso /dev/nvidia*")
    assert rc == 0
    assert out.splitlines() == [
        "crw-rw-rw- 1 root root 510,   0 2026-05-07 10:02:14.000000000 +0000 /dev/nvidia-uvm",
        "crw-rw-rw- 1 root root 195,   0 2026-05-07 10:02:11.000000000 +0000 /dev/nvidia0",
        "crw-rw-rw- 1 root root 195, 255 2026-05-07 10:02:11.000000000 +0000 /dev/nvidiactl",
    ]
    assert await run(targets["node-000"], "systemctl is-active kubelet") == ("active\n", "", 0)
    assert await run(targets["node-001"], "systemctl is-active kubelet") == ("failed\n", "", 3)
    assert await run(targets["node-001"], f"cat {CHECKPOINT}") == (
        "",
        f"cat: {CHECKPOINT}: No such file or directory\n",
        1,
    )
    _, err, rc = await run(targets["node-001"], "ls -l --time-style=full-iso /dev/nvidia*")
    assert rc == 2 and "No such file or directory" in err
    out, _, rc = await run(targets["node-000"], "cat /proc/driver/nvidia/version")
    assert rc == 0 and out.startswith("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03 ")


async def test_every_read_command_is_answered(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(2, {1: {"driver_install": "operator"}}))
    targets = targets_of(fleet)
    for command in sorted(READ_COMMANDS):
        on_operator = command.startswith("chroot ")
        node = "node-001" if on_operator else "node-000"
        _, err, rc = await run(targets[node], command)
        assert (rc, err) == (0, ""), command
    assert all(r.allowed for r in fleet.command_log)
    assert fleet.history("node-000") == [] and fleet.history("node-001") == []


async def test_checkpoint_clear_sequence_changes_state(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    target = targets_of(fleet)["node-000"]
    original = fleet.state("node-000").checkpoint
    assert await run(target, "systemctl stop kubelet") == ("", "", 0)
    assert fleet.state("node-000").kubelet == "inactive"
    assert (await run(target, f"mv {CHECKPOINT} {BACKUP}"))[2] == 0
    assert fleet.state("node-000").checkpoint is None
    assert fleet.backups("node-000") == {BACKUP: original}
    assert (await run(target, f"cat {BACKUP}"))[0] == original
    assert (await run(target, f"mv {CHECKPOINT} {BACKUP}"))[2] == 1  # nothing left to move
    assert await run(target, "systemctl start kubelet") == ("", "", 0)
    assert fleet.state("node-000").kubelet == "active"
    assert fleet.state("node-000").checkpoint == (
        '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":'
        '{"nvidia.com/gpu":["GPU-00000000-0000-4000-8000-000000000000"]}},"Checksum":1}\n'
    )
    assert fleet.history("node-000") == [
        "systemctl stop kubelet",
        f"mv {CHECKPOINT} {BACKUP}",
        f"mv {CHECKPOINT} {BACKUP}",
        "systemctl start kubelet",
    ]
    # a backup name that is not a timestamp is not in the table
    out, _, rc = await run(target, f"mv {CHECKPOINT} /tmp/x")
    assert rc == 127 and fleet.command_log[-1].allowed is False


async def test_kept_combined_read_is_renewed_when_a_command_changes_the_node(start_fleet: StartFleet) -> None:
    """The benchmarks' simulator keeps each node's combined answer; a change must not be hidden by it."""
    fleet = await start_fleet(many_nodes(1))
    fleet.keep_combined = True
    target = targets_of(fleet)["node-000"]

    def kubelet_of(stdout: str) -> str:
        results = split_reads(stdout)
        assert results is not None
        return results[KUBELET_ACTIVE].stdout.strip()

    first = await run(target, COMBINED_READ)
    logged = len(fleet.command_log)
    assert await run(target, COMBINED_READ) == first  # kept, and still logged part by part
    assert [r.command for r in fleet.command_log[logged:]] == list(FIRST_READS)
    assert kubelet_of(first[0]) == "active"
    assert await run(target, "systemctl stop kubelet") == ("", "", 0)
    assert kubelet_of((await run(target, COMBINED_READ))[0]) == "inactive"


async def test_kubelet_that_fails_to_start(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1, {0: {"kubelet_fails_start": True}}))
    target = targets_of(fleet)["node-000"]
    _, err, rc = await run(target, "systemctl restart kubelet")
    assert rc == 1 and err.startswith("Job for kubelet.service failed")
    assert fleet.state("node-000").kubelet == "failed"
    assert await run(target, "systemctl is-active kubelet") == ("failed\n", "", 3)
    assert fleet.history("node-000") == ["systemctl restart kubelet"]


async def test_latency_delays_each_command(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1, {0: {"latency_ms": 300}}))
    started = time.monotonic()
    await run(targets_of(fleet)["node-000"], "systemctl is-active kubelet")
    assert time.monotonic() - started >= 0.3


async def test_scenario_is_not_mutated_and_stop_frees_ports(start_fleet: StartFleet) -> None:
    scenario = many_nodes(1)
    fleet = await start_fleet(scenario)
    target = targets_of(fleet)["node-000"]
    await run(target, "systemctl stop kubelet")
    assert scenario.nodes["node-000"].kubelet == "active"
    await fleet.stop()
    with pytest.raises(NodeProbeError) as info:
        await open_connection(target, timeout=2)
    assert info.value.reason == "refused"
