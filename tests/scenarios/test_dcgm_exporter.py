"""dcgm-exporter as a physical source beside the node reads, end to end over HTTP.

The scenario's node runs the GPU Operator's ``nvidia-dcgm-exporter`` DaemonSet; its pod's IP and
``metrics`` port lead to a real HTTP server that serves the node's cards in dcgm-exporter's text
format. Where the agent could read no kernel log, the card's last Xid from the exporter becomes
its Xid event (``GPU_UNHEALTHY`` names Xid 94, from dcgm-exporter) and the reading says where it
came from; an exporter that does not answer is a note and changes nothing else.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.commands import parse_invocation
from bot.engine.facts import GpuComponents
from bot.engine.gather import dcgm
from bot.engine.node_rows import EarlyRows
from bot.probes.observation import NodeObservation
from bot.report import NodeRow, Report
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.sim.scenario import scenario_from_dict
from tests import yaml_data

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "gpu-unhealthy-xid94-h100.yaml"
NODE = "gpu-h100-07"


def _metrics(gpus: list[dict[str, Any]], xid_on: int) -> str:
    """The node's cards as dcgm-exporter prints them (labels as in tests/data/dcgm)."""
    lines = ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
             "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    fields = {"DCGM_FI_DEV_XID_ERRORS": lambda g: 94 if g["index"] == xid_on else 0,
              "DCGM_FI_DEV_FB_USED": lambda g: g["memory_used_mib"],
              "DCGM_FI_DEV_GPU_UTIL": lambda g: g["utilization_gpu"]}
    for name, value in fields.items():
        for g in gpus:
            labels = (f'gpu="{g["index"]}", UUID="{g["uuid"]}",device="nvidia{g["index"]}",modelName="{g["name"]}",'
                      f'Hostname="{NODE}",container="",namespace="",pod=""')
            lines.append(f"{name}{{{labels}}} {value(g)}")
    return "\n".join(lines) + "\n"


@pytest.fixture
async def exporter() -> AsyncIterator[tuple[int, list[str]]]:
    """A dcgm-exporter stand-in on 127.0.0.1 serving the node's cards, the last Xid 94 on GPU 5
    (port, the paths it was asked for)."""
    asked: list[str] = []
    text = _metrics(yaml_data.load_file(SCENARIO)["nodes"][NODE]["gpus"], xid_on=5)
    app = web.Application()

    async def metrics(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(text=text, content_type="text/plain")

    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield port, asked
    finally:
        await runner.cleanup()


def _with_exporter(port: int, **facts: Any) -> dict[str, Any]:
    data = yaml_data.load_file(SCENARIO)
    data["nodes"][NODE].update(facts)
    labels = {"app": "nvidia-dcgm-exporter"}
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "uid": "uid-ds-dcgm",
                       "labels": labels},
          "spec": {"selector": {"matchLabels": labels},
                   "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "x", "image": "x"}]}}},
          "status": {"desiredNumberScheduled": 1, "numberReady": 1, "currentNumberScheduled": 1,
                     "numberAvailable": 1, "updatedNumberScheduled": 1}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "nvidia-dcgm-exporter-7xk2p", "namespace": "gpu-operator", "uid": "uid-dcgm-pod",
                        "labels": labels, "creationTimestamp": "2024-10-20T00:00:00Z",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "controller": True,
                                             "name": "nvidia-dcgm-exporter", "uid": "uid-ds-dcgm"}]},
           "spec": {"nodeName": NODE, "containers": [{
               "name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04",
               "ports": [{"name": "metrics", "containerPort": port, "protocol": "TCP"}]}]},
           "status": {"phase": "Running", "podIP": "127.0.0.1", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "nvidia-dcgm-exporter", "ready": True, "restartCount": 0,
                                             "image": "dcgm-exporter", "imageID": "dcgm-exporter",
                                             "state": {"running": {"startedAt": "2024-10-20T00:00:00Z"}}}]}}
    data["kubernetes"]["objects"] += [ds, pod]
    return data


async def _node_status(data: dict[str, Any], **settings: Any) -> tuple[Report, NodeRow]:
    async with SimCluster(scenario_from_dict(data, source="dcgm-exporter")) as sim:
        service = Service(sim.settings(node_access="agent", ssh_deadline_s=5.0, **settings))
        try:
            report = await service.run(parse_invocation(["node-status"]))
        finally:
            await service.close()
    (row,) = [r for r in report.nodes if r.node == NODE]
    return report, row


async def test_the_exporters_last_xid_stands_in_for_an_unreadable_kernel_log(
    exporter: tuple[int, list[str]],
) -> None:
    port, asked = exporter
    report, row = await _node_status(_with_exporter(port, agent_kernel_log="none"))
    assert asked == ["/metrics"]
    (finding,) = [f for f in report.findings if f.code == "GPU_UNHEALTHY"]
    assert any("Xid 94" in e for e in finding.evidence), finding.evidence
    assert any(n.startswith("kernel log not readable") for n in row.notes), "the unread log is still said"
    assert any(n.startswith("Xid events from dcgm-exporter's last-Xid field") for n in row.notes)
    (summary,) = [n for n in row.notes if n.startswith("dcgm-exporter gpu-operator/nvidia-dcgm-exporter-7xk2p: ")]
    assert "GPU 5: 0 MiB used, 0% busy, last Xid 94" in summary


async def test_rows_built_as_the_nodes_answer_show_what_the_readings_got_after_the_fan_out(
    exporter: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """node-status builds each row as its node answers (``EarlyRows``); the kubelet's state from its
    Lease and the exporter's notes and Xid come after the fan-out and still show: the table is the
    one built from scratch after every read."""
    port, _ = exporter
    data = _with_exporter(port, agent_kernel_log="none", agent_systemd=False)  # the kubelet from its Lease
    built: list[str] = []
    build = EarlyRows.answered

    def counted(self: EarlyRows, node: str, card: Any) -> None:
        build(self, node, card)
        built.extend([node] if node in self.done else [])

    monkeypatch.setattr(EarlyRows, "answered", counted)
    early, row = await _node_status(data)
    monkeypatch.setattr(EarlyRows, "answered", lambda self, node, card: None)  # every row built after the reads
    late, _ = await _node_status(data)
    assert NODE in built
    assert [r.to_dict() for r in early.nodes] == [r.to_dict() for r in late.nodes]
    assert row.kubelet == "active" and any(n.endswith("(no host systemd to ask from here)") for n in row.notes)
    assert any(n.startswith("Xid events from dcgm-exporter's last-Xid field") for n in row.notes)


async def test_with_the_kernel_log_read_the_exporter_only_adds_its_note(exporter: tuple[int, list[str]]) -> None:
    port, _ = exporter
    _, row = await _node_status(_with_exporter(port, agent_kernel_log="journal-files"))
    assert not any(n.startswith("Xid events from dcgm-exporter") for n in row.notes)
    assert any(n.startswith("dcgm-exporter gpu-operator/") for n in row.notes)


async def test_an_exporter_that_does_not_answer_is_a_note() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    report, row = await _node_status(_with_exporter(closed, agent_kernel_log="none"))
    assert any(n.startswith(f"dcgm-exporter gpu-operator/nvidia-dcgm-exporter-7xk2p not readable at 127.0.0.1:{closed}")
               for n in row.notes), row.notes
    (finding,) = [f for f in report.findings if f.code == "GPU_UNHEALTHY"]
    assert not any("Xid 94" in e for e in finding.evidence)


async def test_switched_off_the_exporter_is_never_asked(exporter: tuple[int, list[str]]) -> None:
    port, asked = exporter
    _, row = await _node_status(_with_exporter(port, agent_kernel_log="none"), dcgm_exporter=False)
    assert asked == [] and not any("dcgm-exporter" in n for n in row.notes)


async def test_an_exporter_that_lets_a_read_time_out_is_not_asked_again_at_once() -> None:
    """Where the bot's traffic to the exporter is dropped, every report would wait out the timeout:
    after one timeout the exporter is skipped (said) until ``SILENT_FOR_S`` has passed."""
    never = asyncio.Event()
    asked: list[str] = []

    async def hang(request: web.Request) -> web.Response:
        asked.append(request.path)
        await never.wait()
        return web.Response(text="")

    app = web.Application()
    app.router.add_get("/metrics", hang)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    pod = _with_exporter(port)["kubernetes"]["objects"][-1]
    components = GpuComponents(pods=[pod])
    try:
        first, second = NodeObservation(node=NODE), NodeObservation(node=NODE)
        await dcgm.dcgm_for_readings(components, {NODE: first}, timeout=0.2)
        await dcgm.dcgm_for_readings(components, {NODE: second}, timeout=0.2)
    finally:
        never.set()
        await runner.cleanup()
        dcgm._SILENT.clear()
    assert asked == ["/metrics"], "asked once"
    assert first.notes == [f"dcgm-exporter gpu-operator/nvidia-dcgm-exporter-7xk2p not readable at 127.0.0.1:{port}: "
                           "no answer within 0.2s"]
    assert second.notes[0].startswith("dcgm-exporter gpu-operator/nvidia-dcgm-exporter-7xk2p not asked: it did not "
                                      f"answer at 127.0.0.1:{port} within the timeout on an earlier read")


async def test_a_check_part_worked_out_as_the_node_answered_gives_way_to_what_came_after_the_fan_out(
    exporter: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node's GPU health is worked out as it answers (``bot.engine.per_node``), before the
    exporter's last Xid is added to its reading; the reading's revision says it changed, so the
    check works the health out again and the card is reported."""
    from bot.engine import per_node

    port, _ = exporter
    worked: list[int] = []
    answered = per_node.EarlyParts.answered

    def counted(self: per_node.EarlyParts, node: str, result: object) -> None:
        answered(self, node, result)
        worked.extend(kept[1] for (part, n), kept in self.done.items() if n == NODE and part.__name__ == "_health")

    monkeypatch.setattr(per_node.EarlyParts, "answered", counted)
    report, _ = await _node_status(_with_exporter(port, agent_kernel_log="none"))
    assert worked == [0], "the health was worked out once, as the node answered, of the reading's first revision"
    (finding,) = [f for f in report.findings if f.code == "GPU_UNHEALTHY"]
    assert any("Xid 94" in e for e in finding.evidence), finding.evidence
