"""The whole remediation loop through the Slack HTTP app, on the zombie-checkpoint scenario.

Signed ``/gpu why-pending`` → the report offers "checkpoint.clear" buttons → an approver's signed
click → the simulator shows cordon, kubelet stop, the checkpoint moved to a backup, kubelet start
and uncordon, in that order → the offer message says who approved it and how it ended, the steps
are in the thread → the diagnosis no longer reports CHECKPOINT_ZOMBIE.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.commands import parse_invocation
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.server import serve
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.slack.transport import SlackServer
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, cluster_writes, scenario
from tests.actions.slack_rig import WHY_PENDING, button_text, buttons, mock_slack_server, slack_rig
from tests.slack.helpers import click_payload, form, interaction_form, post, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


NODES = ("tcs-10-29-25-5", "tcs-10-29-25-6")
REPORT_TS = "1700000000.000002"


def record_timeline(sim: SimCluster) -> Callable[[], dict[str, list[str]]]:
    """Per node: API cordon/uncordon and SSH state changes merged in the order they happened."""
    marks: dict[str, list[tuple[int, str]]] = {n: [] for n in NODES}
    cordoned = {n: False for n in NODES}

    def on_change(change: Any) -> None:
        obj = change.entry.obj
        name = obj["metadata"]["name"]
        # a Node also changes when its kubelet posts status; only spec.unschedulable is a (un)cordon
        if change.rtype.kind == "Node" and name in marks:
            now = bool((obj.get("spec") or {}).get("unschedulable"))
            if now != cordoned[name]:
                cordoned[name] = now
                marks[name].append((len(sim.ssh.history(name)), "cordon" if now else "uncordon"))

    sim.api.store.subscribe(on_change)
    timeline: dict[str, list[str]] = {}

    def build() -> dict[str, list[str]]:
        for node in NODES:
            merged = list(sim.ssh.history(node))
            for at, verb in reversed(marks[node]):
                merged.insert(at, verb)
            timeline[node] = merged
        return timeline

    return build


async def test_zombie_checkpoint_cleared_by_an_approver_click(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        build = record_timeline(rig.sim)
        offered = await rig.command()
        assert "CHECKPOINT_ZOMBIE" in rig.last_report_text()
        for node in NODES:
            values = offered[button_text("checkpoint.clear", node)]
            await rig.click(values[0])
        timeline = build()
        for node in NODES:
            steps = timeline[node]
            assert steps[0] == "cordon"
            assert steps[1] == "systemctl stop kubelet"
            assert steps[2].startswith(f"mv {CHECKPOINT_PATH} {CHECKPOINT_PATH}.bak-")
            assert steps[3:] == ["systemctl start kubelet", "uncordon"], steps

        # the offer message: approved/running first, then the outcome, each replacing only the
        # clicked button; the report and the other offers stay. Steps go into the report's thread
        # (the placeholder's ts), not under the reply.
        report_ts, parent_ts = "1700000000.000002", "1700000000.000001"
        updates = [c.body for c in slack_api.of("chat.update") if c.body["ts"] == report_ts]
        texts = [u["text"] for u in updates]
        running = [i for i, t in enumerate(texts) if f"approved by <@{APPROVER}> at" in t and "running" in t]
        done = [i for i, t in enumerate(texts) if "succeeded" in t and "Clear the device-plugin checkpoint" in t]
        assert len(running) == 2 and len(done) == 2 and running[0] < done[0]
        final = slack_api.message("C0GPU", report_ts)["blocks"]
        assert final[0]["type"] == "header" and "CHECKPOINT_ZOMBIE" in json.dumps(final)
        left = buttons(final)
        for node in NODES:
            clicked, *others = offered[button_text("checkpoint.clear", node)]
            assert left.get(button_text("checkpoint.clear", node), []) == others  # the same fix offered elsewhere stays
            assert left[button_text("kubelet.restart", node)] == offered[button_text("kubelet.restart", node)]
        statuses = [b for b in final if b.get("block_id", "").startswith("offer-status-")]
        assert len(statuses) == 2
        assert all("succeeded" in b["elements"][0]["text"] and APPROVER in b["elements"][0]["text"] for b in statuses)
        thread = [c.body for c in slack_api.of("chat.postMessage") if c.body.get("text", "").startswith("*Steps*")]
        assert len(thread) == 2 and all(t["thread_ts"] == parent_ts for t in thread)
        assert "systemctl stop kubelet" in thread[0]["text"]

        # the diagnosis again, through Slack and straight from the service
        await rig.command()
        assert "CHECKPOINT_ZOMBIE" not in rig.last_report_text()
        service = Service(rig.settings)
        try:
            report = await service.run(parse_invocation(WHY_PENDING.split()))
        finally:
            await service.close()
        assert "CHECKPOINT_ZOMBIE" not in report.codes()

        events = [(e.event, e.outcome) for e in rig.rem.flow.audit.query()]
        for wanted in [("offer", "offered"), ("approve", "approved"), ("start", "started"), ("result", "ok")]:
            assert wanted in events
        assert sum(1 for e in events if e == ("result", "ok")) == 2


async def test_buttons_carry_only_an_opaque_id_behind_a_danger_confirmation(
    tmp_path: Path, slack_api: MockSlackApi
) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        offered = await rig.command()
        clear, restart = button_text("checkpoint.clear", ZOMBIE_NODE), button_text("kubelet.restart", ZOMBIE_NODE)
        assert {clear, restart} <= set(offered)
        report = [c for c in slack_api.of("chat.postMessage") if "finding-0" in json.dumps(c.body.get("blocks"))][-1]
        elements = [e for b in report.body["blocks"] if b["type"] == "actions" for e in b["elements"]]
        assert elements and all(e["type"] == "static_select" for e in elements)  # 2 nodes share each action
        for element in elements:
            # a picker has no style of its own: its confirmation dialog is the danger one
            assert element.get("style", "danger") == "danger" and element["confirm"]["style"] == "danger"
            assert len(element["confirm"]["text"]["text"]) <= 300
            if element["placeholder"]["text"].startswith("Clear the device-plugin checkpoint"):
                assert "kubernetes#116125" in element["confirm"]["text"]["text"]  # the blast radius
            for option in element["options"]:
                record = rig.rem.flow.store.get(option["value"])
                assert record is not None and record.state == "pending"
                assert "tcs-10-29" not in option["value"]
                assert record.requested_by == "U0ALICE" and record.finding_code
        assert cluster_writes(rig.sim) == []


async def test_gpubot_serve_wires_the_remediation_loop(tmp_path: Path, slack_api: MockSlackApi) -> None:
    """``gpubot serve`` as production builds it (``bot.wiring``, no stand-ins): the report's buttons
    carry offers, an approver's click runs the fix once through the diagnosis service's clients,
    and the clicked button becomes the outcome."""
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api,
            base=sim.settings(),
            approvers={"*": (APPROVER,)},
            node_ready_timeout_s=5.0,
            state_path=str(tmp_path / "state.db"),
        )
        stop = asyncio.Event()
        started: asyncio.Future[SlackServer] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(settings, stop=stop, started=started, configure_logs=False))
        try:
            server = await asyncio.wait_for(asyncio.shield(started), 30)
            url = f"http://127.0.0.1:{server.port}/slack/events"
            body = form(slash_payload(slack_api, WHY_PENDING))
            assert (await post(url, body, sign(body)))[0] == 200
            await slack_api.wait_for(lambda: ("C0GPU", REPORT_TS) in slack_api.messages, timeout=60)
            await slack_api.wait_for(lambda: len(server.bot.tasks) == 0, timeout=60)  # offers recorded
            shown = buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])
            value = shown[button_text("checkpoint.clear", NODES[0])][0]
            click = interaction_form(click_payload(slack_api, value, user=APPROVER))
            assert (await post(url, click, sign(click)))[0] == 200
            done = f"offer-status-{value}"

            def outcome() -> str:
                blocks = slack_api.message("C0GPU", REPORT_TS)["blocks"]
                return next((b["elements"][0]["text"] for b in blocks if b.get("block_id") == done), "")

            await slack_api.wait_for(lambda: "succeeded" in outcome(), timeout=60)
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
        assert len(sim.ssh.history(NODES[0])) == 3 and sim.ssh.history(NODES[1]) == []
