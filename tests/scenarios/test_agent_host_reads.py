"""The node agent as on a real node: no journalctl, no /dev/kmsg, nvidia-smi maybe not on its PATH.

End to end through the simulator's Kubernetes API (exec WebSocket into each gpubot-node pod): the
bot falls back to the agent's own reads (``python -m bot.agent ...``, bot/probes/agent_reads.py),
reads the Xid lines the host's journal files or kern.log hold, and says which source it used; where
none is readable the report says so and does not call the card's hardware clean; nvidia-smi is
found in the host's driver directory (GKE's /home/kubernetes/bin/nvidia) and named; nowhere, the
note says how to give the agent one. Only allow-listed commands ever reach the agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.commands import parse_invocation
from bot.doctor.run import run_doctor_on_scenario
from bot.probes.agent_reads import AGENT_KERNEL_LOG, AGENT_READ_COMMANDS, AGENT_SMI_WHERE
from bot.probes.ssh import READ_COMMANDS
from bot.report import NodeRow, Report
from bot.service import Service
from bot.settings import load_settings
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from tests import yaml_data

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "gpu-unhealthy-xid94-h100.yaml"
NODE = "gpu-h100-07"


def _data(**facts: str) -> dict[str, Any]:
    data = yaml_data.load_file(SCENARIO)
    data["nodes"][NODE].update(facts)
    return data


async def _node_status(data: dict[str, Any]) -> tuple[Report, NodeRow, SimCluster]:
    async with SimCluster(scenario_from_dict(data, source="agent-host-reads")) as sim:
        service = Service(sim.settings(node_access="agent", ssh_deadline_s=5.0))
        try:
            report = await service.run(parse_invocation(["node-status"]))
        finally:
            await service.close()
    (row,) = [r for r in report.nodes if r.node == NODE]
    return report, row, sim


def _sent(sim: SimCluster) -> list[str]:
    return [argv[2] for *_, argv, _code in sim.api.exec_log]


@pytest.mark.parametrize(("mode", "where"), [("journal-files", "/var/log/journal (1 file, this boot)"),
                                             ("log-files", "/var/log/kern.log (since the last boot banner)")])
async def test_the_xid_comes_from_the_hosts_log_files_and_the_source_is_named(mode: str, where: str) -> None:
    report, row, sim = await _node_status(_data(agent_kernel_log=mode))
    assert [f.code for f in report.findings][:1] == ["GPU_UNHEALTHY"]
    (finding,) = [f for f in report.findings if f.code == "GPU_UNHEALTHY"]
    assert any("Xid 94" in e for e in finding.evidence), finding.evidence
    assert f"kernel log read by the agent from {where}" in row.notes
    assert not any("not readable" in n for n in row.notes)
    sent = _sent(sim)
    assert AGENT_KERNEL_LOG in sent and set(sent) <= READ_COMMANDS | AGENT_READ_COMMANDS
    assert sim.api.writes == []


async def test_no_readable_kernel_log_is_said_and_never_read_as_clean() -> None:
    report, row, _ = await _node_status(_data(agent_kernel_log="none"))
    (note,) = [n for n in row.notes if n.startswith("kernel log not readable")]
    assert note == (
        "kernel log not readable (journalctl, the host's log files, dmesg): journal /var/log/journal: No such file "
        "or directory; file /var/log/kern.log: No such file or directory; dmesg: read kernel buffer failed: "
        "Operation not permitted"
    )
    # the ECC counters still show the card's trouble; the Xid line itself was not read
    text = " ".join(e for f in report.findings for e in f.evidence)
    assert "Xid 94" not in text


async def test_nvidia_smi_from_the_hosts_driver_directory_is_named() -> None:
    _, row, sim = await _node_status(_data(agent_driver="host"))
    assert len(row.gpus) == 8
    assert "nvidia-smi from the host /home/kubernetes/bin/nvidia (bin/nvidia-smi, lib64)" in row.notes
    assert AGENT_SMI_WHERE in _sent(sim)


async def test_no_nvidia_smi_anywhere_says_how_to_give_the_agent_one() -> None:
    _, row, _ = await _node_status(_data(agent_driver="none"))
    assert not row.gpus
    assert any(n.startswith("nvidia-smi not found: looked on PATH, /home/kubernetes/bin/nvidia/bin (no RuntimeClass")
               and "nodeAgent.hostDriver" in n for n in row.notes), row.notes


async def test_doctor_names_the_kernel_log_source_and_the_driver_directory(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_data(agent_kernel_log="journal-files", agent_driver="host")))
    settings = load_settings(env={}, node_access="agent", dry_run=True, ssh_deadline_s=5.0)
    report = await run_doctor_on_scenario(settings, str(path))
    (reads,) = [c for c in report.checks if c.name == "node-reads"]
    assert "kernel log via journal-files" in reads.text, reads
    assert "nvidia-smi from the host /home/kubernetes/bin/nvidia" in reads.text, reads


async def test_doctor_says_why_no_kernel_log_was_readable_and_how_to_give_the_agent_one(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_data(agent_kernel_log="none")))
    settings = load_settings(env={}, node_access="agent", dry_run=True, ssh_deadline_s=5.0)
    report = await run_doctor_on_scenario(settings, str(path))
    (reads,) = [c for c in report.checks if c.name == "node-reads"]
    assert reads.status == "warn"
    assert ("kernel log not readable (Xid and fallen-off-the-bus lines are not seen): journal /var/log/journal: "
            "No such file or directory") in reads.text, reads
    assert "nodeAgent.kernelLog" in reads.fix, reads
