"""Approval requests, end to end through the Slack HTTP app on the zombie-checkpoint scenario.

Signed ``/gpu why-pending`` → one button per distinct fix, only for actions somebody may approve →
a non-approver's signed click → a request in the report's thread mentioning the approver group,
with Approve and Deny, and the clicker told who was asked → an approver's signed Approve → the
action runs exactly once on the simulated node → the report's button and the request both show
the outcome. Also: Deny, the two-person rule (who approved, who must second) and the metrics.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.sim.cluster import SimCluster
from tests.actions.conftest import APPROVER, REQUESTER, ZOMBIE_NODE, cluster_writes, scenario, state_changes
from tests.actions.slack_rig import SlackRig, button_text, buttons, mock_slack_server, slack_rig, started
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi

GROUP = "S0GPUONCALL"
BUTTON = button_text("checkpoint.clear", ZOMBIE_NODE)
OTHER_NODE = "tcs-10-29-25-6"
REPORT_TS, PARENT_TS = "1700000000.000002", "1700000000.000001"
APPROVE, DENY = "approval:approve", "approval:deny"
#: every action may be approved by the on-call group, but nobody may restart the qGPU manager
APPROVERS = {"*": (GROUP,), "qgpu.*": ()}


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        mock.usergroup_members[GROUP] = [APPROVER]
        yield mock


def requests_posted(mock: MockSlackApi) -> list[dict[str, Any]]:
    """The approval requests, as the channel now shows them."""
    return [
        m for m in mock.messages.values() if any(b.get("block_id", "").startswith("approval-") for b in m["blocks"])
    ]


def ephemerals(mock: MockSlackApi) -> list[str]:
    return [c.body.get("text", "") for c in mock.of("response_url") if c.body.get("response_type") == "ephemeral"]


def status_line(mock: MockSlackApi, offer: str) -> str:
    blocks = mock.message("C0GPU", REPORT_TS)["blocks"]
    return next((b["elements"][0]["text"] for b in blocks if b.get("block_id") == f"offer-status-{offer}"), "")


async def scrape(rig: SlackRig) -> str:
    async with aiohttp.ClientSession() as session, session.get(rig.app.url + "/metrics") as resp:
        return await resp.text()


async def test_a_non_approvers_click_asks_the_approvers_and_an_approval_runs_it_once(
    tmp_path: Path, slack_api: MockSlackApi
) -> None:
    async with slack_rig(tmp_path, slack_api, approvers=APPROVERS) as rig:
        offered = await rig.command(user=REQUESTER)
        # one button per distinct fix, least invasive first, none for an action nobody may approve
        assert list(offered) == [
            button_text("kubelet.restart", ZOMBIE_NODE),
            button_text("kubelet.restart", OTHER_NODE),
            BUTTON,
            button_text("checkpoint.clear", OTHER_NODE),
        ]
        assert all(len(values) == 1 for values in offered.values())
        report = slack_api.message("C0GPU", REPORT_TS)
        assert len(report["blocks"]) <= 15
        named = "Restart qgpu-manager · tcs-10-29-25-5"
        assert named in json.dumps(report["blocks"], ensure_ascii=False)  # named, without a button
        value = offered[BUTTON][0]

        # the requester may not approve: their click becomes a request to the approver group
        await rig.click(value, user=REQUESTER)
        assert state_changes(rig.sim) == {} and cluster_writes(rig.sim) == []
        (request,) = requests_posted(slack_api)
        assert request["thread_ts"] == PARENT_TS
        text = json.dumps(request["blocks"])
        assert f"<!subteam^{GROUP}>" in text
        assert f"<@{REQUESTER}> asks to run *Clear the device-plugin checkpoint*" in text
        assert [b["action_id"] for b in request["blocks"][-1]["elements"]] == [APPROVE, DENY]
        assert {b["value"] for b in request["blocks"][-1]["elements"]} == {value}
        assert f"asked <!subteam^{GROUP}>" in ephemerals(slack_api)[-1]
        assert buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])[BUTTON] == [value]  # still open

        # an approver approves from the request: the fix runs, once
        await rig.click(value, user=APPROVER, action_id=APPROVE)
        steps = state_changes(rig.sim)[ZOMBIE_NODE]
        assert steps[0] == "systemctl stop kubelet" and steps[1].startswith(f"mv {CHECKPOINT_PATH} ")
        assert steps[2:] == ["systemctl start kubelet"]
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]

        # the report shows the result in place of the button; the request gives up its buttons
        line = status_line(slack_api, value)
        assert "succeeded" in line and f"approved by <@{APPROVER}>" in line
        assert BUTTON not in buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])
        (request,) = requests_posted(slack_api)
        assert not [b for b in request["blocks"] if b["type"] == "actions"]
        assert "succeeded" in json.dumps(request["blocks"])

        # a second Approve (a double click, another approver) runs nothing
        await rig.click(value, user=APPROVER, action_id=APPROVE)
        assert state_changes(rig.sim)[ZOMBIE_NODE] == steps
        assert "runs only once" in ephemerals(slack_api)[-1]

        events = [(e.event, e.actor) for e in rig.rem.flow.audit.query(action_id=value)]
        assert ("request", REQUESTER) in events and ("approve", APPROVER) in events
        assert sum(1 for e, _ in events if e == "start") == 1
        metrics = await scrape(rig)
    assert 'gpubot_remediation_offers_total{action="checkpoint.clear"} 2.0' in metrics
    assert 'gpubot_remediation_approval_requests_total{action="checkpoint.clear"} 1.0' in metrics
    assert 'gpubot_remediation_approvals_total{action="checkpoint.clear"} 1.0' in metrics
    assert 'gpubot_remediation_action_outcomes_total{action="checkpoint.clear",outcome="succeeded"} 1.0' in metrics
    assert 'gpubot_remediation_refusals_total{action="checkpoint.clear",reason="already_taken"} 1.0' in metrics
    assert 'action="qgpu.restart-manager"' not in metrics  # never offered


async def test_an_approver_can_deny_a_request(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api, approvers=APPROVERS) as rig:
        value = (await rig.command(user=REQUESTER))[BUTTON][0]
        await rig.click(value, user=REQUESTER)
        await rig.click(value, user=REQUESTER, action_id=DENY)  # not an approver: cannot deny either
        assert rig.rem.flow.store.get(value).state == "pending"  # type: ignore[union-attr]
        assert "cannot deny" in ephemerals(slack_api)[-1]
        await rig.click(value, user=APPROVER, action_id=DENY)
        assert rig.rem.flow.store.get(value).state == "refused"  # type: ignore[union-attr]
        assert state_changes(rig.sim) == {} and cluster_writes(rig.sim) == []
        assert f"denied by <@{APPROVER}>" in status_line(slack_api, value)
        (request,) = requests_posted(slack_api)
        assert "denied" in json.dumps(request["blocks"])
        assert not [b for b in request["blocks"] if b["type"] == "actions"]
        # the denied offer is gone for good
        await rig.click(value, user=APPROVER)
        assert state_changes(rig.sim) == {}
        denials = [e for e in rig.rem.flow.audit.query(action_id=value) if e.event == "deny"]
        assert len(denials) == 1 and denials[0].actor == APPROVER
        metrics = await scrape(rig)
    assert 'gpubot_remediation_refusals_total{action="checkpoint.clear",reason="denied"} 1.0' in metrics


async def test_two_person_rule_shows_who_approved_and_who_must_second(tmp_path: Path, slack_api: MockSlackApi) -> None:
    approvers = {"*": (REQUESTER, APPROVER)}
    async with slack_rig(tmp_path, slack_api, approvers=approvers, two_person_rule=True, dry_run=True) as rig:
        value = (await rig.command(user=REQUESTER))[BUTTON][0]
        await rig.click(value, user=REQUESTER)
        (request,) = requests_posted(slack_api)
        text = request["blocks"][0]["text"]["text"]
        assert "two-person rule" in text
        assert f"*Approved by:* <@{REQUESTER}>" in text
        assert f"*Must second:* <@{APPROVER}> (not <@{REQUESTER}>)" in text
        assert "second it" in ephemerals(slack_api)[-1]
        await rig.click(value, user=APPROVER, action_id=APPROVE)
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]
        assert f"approved by <@{APPROVER}>" in status_line(slack_api, value)


async def test_a_request_outlives_a_restart(tmp_path: Path, slack_api: MockSlackApi) -> None:
    """Asked before a restart, approved after it: the new process runs the fix once and closes the
    request from the blocks Slack sends with the click. It never saw the report's blocks (reading
    them back would need a history scope), so the outcome goes into the report's thread."""
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api, base=sim.settings(), approvers=APPROVERS, node_ready_timeout_s=5.0, dry_run=True,
            state_path=str(tmp_path / "state.db"),
        )
        async with started(settings, slack_api) as bot:
            rig = SlackRig(sim, bot, slack_api, settings)
            value = (await rig.command(user=REQUESTER))[BUTTON][0]
            await rig.click(value, user=REQUESTER)
        async with started(settings, slack_api) as bot:
            rig = SlackRig(sim, bot, slack_api, settings)
            assert not bot.slack.requests  # a new process: nothing remembered
            await rig.click(value, user=APPROVER, action_id=APPROVE)
            assert bot.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]
    (request,) = requests_posted(slack_api)
    assert not [b for b in request["blocks"] if b["type"] == "actions"]
    assert "succeeded" in json.dumps(request["blocks"])
    notes = [c.body for c in slack_api.of("chat.postMessage") if "succeeded" in str(c.body.get("text"))]
    assert [n["thread_ts"] for n in notes] == [PARENT_TS]
    assert buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])[BUTTON] == [value]  # never edited
