"""observe_node / observe_nodes against the simulated fleet, over real SSH."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from bot.errors import NodeProbeError
from bot.probes.node import NodeObservation, observe_node, observe_nodes, ssh_target_for
from bot.probes.ssh import READ_COMMANDS, SshTarget, open_connection, run_command
from bot.sim.scenario import load_scenario
from tests.conftest import StartFleet
from tests.probes import gpu_uuid, many_nodes, node_dict, scenario_of, targets_of

SCENARIOS = sorted(Path(__file__).resolve().parents[2].joinpath("scenarios").glob("*.yaml"))


def only_reads(fleet_log: list) -> bool:  # type: ignore[type-arg]
    return all(r.allowed and r.command in READ_COMMANDS for r in fleet_log)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_observation_matches_every_scenario(path: Path, start_fleet: StartFleet) -> None:
    scenario = load_scenario(path)
    fleet = await start_fleet(scenario)
    results = await observe_nodes(targets_of(fleet), deadline=5)
    for node, facts in scenario.nodes.items():
        obs = results[node]
        if facts.ssh != "ok":
            assert isinstance(obs, NodeProbeError)
            continue
        assert isinstance(obs, NodeObservation), obs
        # a card without a handle makes nvidia-smi print only that error, as the real tool does
        lost = [g for g in facts.gpus if g.lost]
        shown = [] if lost else facts.gpus
        assert [(g.index, g.uuid, g.utilization_gpu, g.memory_used_mib, g.power_w) for g in obs.gpus] == [
            (g.index, g.uuid, g.utilization_gpu, g.memory_used_mib, g.power_w) for g in shown
        ]
        assert [(p.pid, p.gpu_uuid, p.used_memory_mib) for p in obs.processes] == [
            (p.pid, p.gpu_uuid, p.used_memory_mib) for p in ([] if lost else facts.processes)
        ]
        assert (obs.driver_version, obs.cuda_version, obs.kubelet) == (
            facts.driver,
            "" if lost else facts.cuda,
            facts.kubelet,
        )
        assert len(obs.lost_gpus) == len(lost)
        assert len(obs.xids) == len(facts.xid)
        assert obs.kernel_log == {"journal": "journal", "dmesg": "dmesg", "none": ""}[facts.kernel_log_source]
        if shown:
            assert [(e.volatile_uncorrected or 0) for e in obs.ecc] == [
                g.ecc_volatile_uncorrected or 0 for g in shown
            ]
        assert (obs.checkpoint is None) == (facts.checkpoint is None) and obs.checkpoint_error == ""
        assert [d.name for d in obs.dev_nvidia] == sorted(d.name for d in facts.dev_nvidia)
        assert obs.driver_path == ("operator" if facts.driver_install == "operator" else "host")
        expected_notes = (not facts.dev_nvidia) + (not facts.driver) + bool(lost)
        expected_notes += facts.kernel_log_source == "none"
        assert len(obs.notes) == expected_notes, obs.notes
    assert only_reads(fleet.command_log)
    assert all(fleet.history(n) == [] for n in scenario.nodes)


async def test_one_connection_and_the_full_observation(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    obs = await observe_node(targets_of(fleet)["node-000"], deadline=5)
    assert obs.gpus[0].uuid == gpu_uuid(0) and obs.gpus[0].power_w == 30.25
    assert obs.processes[0].pid == 1000
    assert obs.checkpoint is not None and obs.checkpoint.pod_uids() == {"pod-0"}
    assert obs.device_skew == timedelta(seconds=3)
    # 4 nvidia-smi reads, checkpoint, /dev/nvidia*, kubelet, driver version, kernel log
    assert len(fleet.command_log) == 9 and only_reads(fleet.command_log)
    assert obs.kernel_log == "journal" and obs.xids == [] and obs.ecc_read and obs.lost_gpus == []
    assert len(fleet._connections) <= 1  # the probe's one connection, if not yet reaped


async def test_operator_driver_falls_back_to_chroot(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1, {0: {"driver_install": "operator"}}))
    obs = await observe_node(targets_of(fleet)["node-000"], deadline=5)
    assert obs.driver_path == "operator"
    assert [g.uuid for g in obs.gpus] == [gpu_uuid(0)] and obs.cuda_version == "12.2"
    assert obs.nvidia_smi_error == "" and obs.notes == []
    assert only_reads(fleet.command_log)
    assert sum(r.exit_status == 127 for r in fleet.command_log) == 4


async def test_odd_node_states_become_notes_not_errors(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(
        scenario_of(
            {
                "broken-cp": node_dict(1, checkpoint="{not json"),
                "no-cp": node_dict(2, checkpoint=None, kubelet="inactive", dev_nvidia=[]),
                "no-cards": node_dict(3, gpus=[], processes=[], driver=""),
            }
        )
    )
    results = await observe_nodes(targets_of(fleet), deadline=5)
    broken, missing, no_cards = results["broken-cp"], results["no-cp"], results["no-cards"]
    assert isinstance(broken, NodeObservation) and broken.checkpoint is None
    assert "not valid JSON" in broken.checkpoint_error
    assert isinstance(missing, NodeObservation)
    assert (missing.checkpoint, missing.checkpoint_error, missing.kubelet) == (None, "", "inactive")
    assert missing.dev_nvidia == [] and missing.device_skew is None
    assert any("/dev/nvidia" in n for n in missing.notes)
    assert isinstance(no_cards, NodeObservation) and no_cards.gpus == []
    assert no_cards.nvidia_smi_error == "No devices were found"
    assert any("kernel module" in n for n in no_cards.notes)


async def test_twenty_nodes_one_silent_finishes_within_the_deadline(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(20, {7: {"ssh": "timeout"}}))
    started = time.monotonic()
    results = await observe_nodes(targets_of(fleet), concurrency=16, deadline=1.5)
    elapsed = time.monotonic() - started
    assert elapsed < 1.5 + 1.0, elapsed
    silent = results.pop("node-007")
    assert isinstance(silent, NodeProbeError) and silent.reason == "timeout"
    assert len(results) == 19
    for node, obs in results.items():
        assert isinstance(obs, NodeObservation), (node, obs)
        assert obs.gpus[0].uuid == gpu_uuid(int(node[-3:]))


async def test_a_silent_node_costs_one_deadline_even_when_serialised(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(4, {0: {"ssh": "timeout"}}))
    started = time.monotonic()
    results = await observe_nodes(targets_of(fleet), concurrency=1, deadline=1.0)
    assert time.monotonic() - started < 1.0 + 1.5
    assert sum(isinstance(r, NodeObservation) for r in results.values()) == 3


async def test_fault_reasons(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(
        many_nodes(4, {0: {"ssh": "auth-denied"}, 1: {"ssh": "unreachable"}, 2: {"ssh": "wrong-host-key"}})
    )
    results = await observe_nodes(targets_of(fleet), deadline=3)
    reasons = {n: r.reason if isinstance(r, NodeProbeError) else "ok" for n, r in results.items()}
    assert reasons == {"node-000": "auth", "node-001": "refused", "node-002": "host-key", "node-003": "ok"}
    assert all(r.node == "node-003" for r in fleet.command_log)


async def test_run_command_refuses_before_sending(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    conn = await open_connection(targets_of(fleet)["node-000"], timeout=5)
    async with conn:
        with pytest.raises(ValueError, match="allow-list"):
            await run_command(conn, "systemctl restart kubelet", allowed=READ_COMMANDS)
        with pytest.raises(ValueError):
            await run_command(conn, "nvidia-smi ; reboot", allowed=READ_COMMANDS)
        ok = await run_command(conn, "systemctl is-active kubelet", allowed=READ_COMMANDS)
    assert (ok.stdout, ok.exit_status) == ("active\n", 0)
    assert [r.command for r in fleet.command_log] == ["systemctl is-active kubelet"]


async def test_missing_known_hosts_never_connects(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    target = targets_of(fleet)["node-000"]
    with pytest.raises(NodeProbeError) as info:
        await open_connection(SshTarget(**{**target.__dict__, "known_hosts": ""}), timeout=5)
    assert info.value.reason == "host-key"
    with pytest.raises(NodeProbeError) as info:
        await open_connection(SshTarget(**{**target.__dict__, "key_path": "/nonexistent/key"}), timeout=5)
    assert info.value.reason == "auth"
    with pytest.raises(NodeProbeError) as info:
        await open_connection(SshTarget(**{**target.__dict__, "known_hosts": "/nonexistent/kh"}), timeout=5)
    assert info.value.reason == "host-key"
    assert fleet.command_log == []


class _Proxy:
    """A TCP relay that drops the first ``drops`` connections, then forwards to ``port``."""

    def __init__(self, port: int, drops: int) -> None:
        self.port, self.drops, self.seen = port, drops, 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.seen += 1
        if self.seen <= self.drops:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()


async def test_a_dropped_connection_is_retried_a_timeout_is_not(
    start_fleet: StartFleet, tmp_path: Path
) -> None:
    fleet = await start_fleet(many_nodes(1))
    target = targets_of(fleet)["node-000"]
    proxy = _Proxy(target.port, drops=1)
    proxy_port = await proxy.start()
    # known_hosts names the fleet's port; the proxy's port needs its own line with the same key
    key_line = fleet.known_hosts_path.read_text().split(" ", 1)[1]
    known = tmp_path / "known_hosts_proxy"
    known.write_text(f"[127.0.0.1]:{proxy_port} {key_line}")
    via_proxy = SshTarget(target.node, "127.0.0.1", proxy_port, target.user, target.key_path, str(known))
    obs = await observe_node(via_proxy, deadline=5)
    assert obs.gpus and proxy.seen == 2
    await proxy.stop()

    # a silent listener: exactly one attempt, then the deadline
    accepted: list[int] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        await reader.read()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with pytest.raises(NodeProbeError) as info:
        await observe_node(
            SshTarget("quiet", "127.0.0.1", port, "gpubot", target.key_path, str(known)), deadline=0.5
        )
    assert info.value.reason == "timeout" and accepted == [1]
    server.close()


def test_ssh_target_for() -> None:
    common = {"user": "gpubot", "key_path": "/k", "known_hosts": "/kh"}
    node = {
        "status": {
            "addresses": [
                {"type": "Hostname", "address": "n1"},
                {"type": "InternalIP", "address": "10.0.0.5"},
            ]
        }
    }
    assert ssh_target_for("n1", node, overrides={}, **common) == SshTarget(
        "n1", "10.0.0.5", 22, "gpubot", "/k", "/kh"
    )
    assert ssh_target_for("n1", node, overrides={"n1": "127.0.0.1:2222"}, **common).port == 2222
    assert ssh_target_for("n1", node, overrides={"n1": "[::1]:2200"}, **common).host == "::1"
    assert ssh_target_for("n1", node, overrides={"n1": "gpu-host"}, **common).port == 22
    assert ssh_target_for("n2", None, overrides={}, **common).host == "n2"
    with pytest.raises(NodeProbeError):
        ssh_target_for("n1", node, overrides={"n1": "host:notaport"}, **common)


async def test_a_changed_known_hosts_file_is_read_again(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(2, {1: {"ssh": "wrong-host-key"}}))
    targets = targets_of(fleet)
    with pytest.raises(NodeProbeError):
        await open_connection(targets["node-001"], timeout=5)
    # the operator accepts the node's new key: known_hosts changes, the next probe must see it
    assert fleet.keys is not None
    presented = fleet.keys.nodes["node-001"].presented.export_public_key().decode().split()[:2]
    lines = fleet.known_hosts_path.read_text().splitlines()
    port = fleet.targets["node-001"][1]
    fixed = [f"[127.0.0.1]:{port} {' '.join(presented)}" if f":{port} " in ln else ln for ln in lines]
    fleet.known_hosts_path.write_text("\n".join(fixed) + "\n")
    stat = fleet.known_hosts_path.stat()
    os.utime(fleet.known_hosts_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    conn = await open_connection(targets["node-001"], timeout=5)
    conn.close()


async def test_lost_card_xids_and_ecc_are_read(start_fleet: StartFleet) -> None:
    lost_card = {**node_dict(0)["gpus"][0], "index": 1, "uuid": gpu_uuid(0, 1), "bus_id": "0000:a1:00.0",
                 "lost": True}
    sick = {
        "gpus": [{**node_dict(0)["gpus"][0], "ecc_volatile_uncorrected": 2, "retired_pages_pending": True}],
        "xid": [{"time": "2026-05-07T10:00:00Z", "pci": "0000:1a:00", "xid": 48, "pid": 4242, "name": "python",
                 "text": "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer"}],
    }
    fleet = await start_fleet(many_nodes(3, {0: sick, 1: {"gpus": [node_dict(1)["gpus"][0], lost_card],
                                                          "kernel_log_source": "dmesg"},
                                             2: {"kernel_log_source": "none"}}))
    results = await observe_nodes(targets_of(fleet), deadline=5)
    first, second, third = (results[f"node-00{i}"] for i in range(3))
    assert isinstance(first, NodeObservation) and isinstance(second, NodeObservation)
    assert isinstance(third, NodeObservation)
    assert [(x.xid, x.pci, x.pid) for x in first.xids] == [(48, "0000:1a:00", "4242")]
    assert first.kernel_log == "journal" and first.lost_gpus == []
    assert [(e.pci, e.volatile_uncorrected, e.retired_pending) for e in first.ecc] == [("0000:1a:00", 2, True)]
    assert first.index_of("0000:1a:00") == 0
    # one lost card: nvidia-smi prints only the handle error, the probe keeps reading the rest
    assert second.gpus == [] and [(g.pci, g.source) for g in second.lost_gpus] == [("0000:a1:00", "nvidia-smi")]
    assert "Unable to determine the device handle" in second.nvidia_smi_error
    assert second.kernel_log == "dmesg" and second.checkpoint is not None
    assert third.kernel_log == "" and any("kernel log not readable" in n for n in third.notes)
    assert only_reads(fleet.command_log)
    dmesg = [r for r in fleet.command_log if r.command.startswith("dmesg")]
    assert sorted(r.node for r in dmesg) == ["node-001", "node-002"]


async def test_commands_on_a_kept_connection_leave_nothing_for_the_cyclic_collector(start_fleet: StartFleet) -> None:
    """Each command's session is freed as soon as it is done (``bot.probes.ssh_session``):
    asyncssh's ``run`` left its process, channel and streams in reference cycles, ~24 objects a
    command that only the collector freed (a 15 ms collection inside every 500-node fan-out)."""
    import gc

    fleet = await start_fleet(many_nodes(1))
    conn = await open_connection(targets_of(fleet)["node-000"], timeout=5)
    async with conn:
        await run_command(conn, "systemctl is-active kubelet", allowed=READ_COMMANDS)
        gc.collect()
        gc.disable()
        try:
            results = [await run_command(conn, "systemctl is-active kubelet", allowed=READ_COMMANDS)
                       for _ in range(20)]
            await asyncio.sleep(0.05)  # the channels' close handshakes
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert {(r.stdout, r.exit_status) for r in results} == {("active\n", 0)}
    client_side = {"SSHClientChannel", "SSHClientProcess", "_Gathered"}
    assert not client_side & set(left), sorted(set(left))
