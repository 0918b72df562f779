"""Clicks that must not run anything, through the Slack HTTP app on the zombie-checkpoint scenario.

Each refusal is audited with its reason and leaves the simulator's write log and SSH state-change
history empty: a non-approver (whose click asks the approvers instead, and who cannot approve the
request either), an expired offer, a forged or unknown id, a precondition that no longer holds,
and the requester approving their own request under the two-person rule (a first approval only).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.actions.conftest import APPROVER, REQUESTER, ZOMBIE_NODE, cluster_writes, state_changes
from tests.actions.slack_rig import SlackRig, button_text, mock_slack_server, slack_rig
from tests.slack.mock_slack_api import MockSlackApi


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


BUTTON = button_text("checkpoint.clear", ZOMBIE_NODE)
EMPTY_CHECKPOINT = '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":1}'


def assert_nothing_changed(rig: SlackRig) -> None:
    assert cluster_writes(rig.sim) == []
    assert state_changes(rig.sim) == {}


def refusals(rig: SlackRig) -> list[str]:
    return [str(e.detail.get("reason", "")) for e in rig.rem.flow.audit.query() if e.event in ("refuse", "expire")]


def requests(rig: SlackRig) -> list[str]:
    return [str(e.detail.get("reason", "")) for e in rig.rem.flow.audit.query() if e.event == "request"]


def ephemerals(mock: MockSlackApi) -> list[str]:
    return [c.body.get("text", "") for c in mock.of("response_url") if c.body.get("response_type") == "ephemeral"]


async def test_non_approver_asks_and_the_offer_stays_open(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        value = (await rig.command())[BUTTON][0]
        await rig.click(value, user="U0MALLORY")
        assert_nothing_changed(rig)
        assert any("U0MALLORY is not an approver" in r for r in requests(rig))
        assert any(f"asked <@{APPROVER}>" in t for t in ephemerals(slack_api))
        assert rig.rem.flow.store.get(value).state == "pending"  # type: ignore[union-attr]
        assert not slack_api.of("usergroups.users.list")  # no group approvers configured: no lookup
        # nor can the non-approver approve the request they caused
        await rig.click(value, user="U0MALLORY", action_id="approval:approve")
        assert_nothing_changed(rig)
        assert "needs an approver: U0MALLORY is not an approver" in ephemerals(slack_api)[-1]
        assert rig.rem.flow.store.get(value).state == "pending"  # type: ignore[union-attr]
        # a real approver can still click it
        await rig.click(value)
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]


async def test_group_approvers_are_looked_up_in_slack(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api, approvers={"checkpoint.*": ("S0ONCALL",)}) as rig:
        value = (await rig.command())[BUTTON][0]
        await rig.click(value, user="U0CAROL")
        calls = slack_api.of("usergroups.users.list")
        assert [c.body.get("usergroup") for c in calls] == ["S0ONCALL"]
        assert_nothing_changed(rig)  # the mock's group has no members
        assert any("not an approver" in r for r in requests(rig))


async def test_expired_offer_is_refused(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api, action_ttl_s=0) as rig:
        value = (await rig.command())[BUTTON][0]
        await rig.click(value)
        assert_nothing_changed(rig)
        assert any("expired" in r for r in refusals(rig))
        assert rig.rem.flow.store.get(value).state == "expired"  # type: ignore[union-attr]
        final = slack_api.of("chat.update")[-1].body["text"]
        assert "expired" in final and "Clear the device-plugin checkpoint" in final


async def test_forged_and_unknown_ids_are_refused(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        await rig.command()
        for value in ("A" * 32, "checkpoint.clear node=tcs-10-29-25-5", ""):
            await rig.click(value)
        assert_nothing_changed(rig)
        assert refusals(rig).count("unknown or forged id") == 3
        assert sum("unknown or was forged" in t for t in ephemerals(slack_api)) == 3


async def test_precondition_no_longer_true_is_refused(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        value = (await rig.command())[BUTTON][0]
        # between offer and click, somebody fixed the node by hand
        rig.sim.ssh.state(ZOMBIE_NODE).checkpoint = EMPTY_CHECKPOINT
        await rig.click(value)
        assert_nothing_changed(rig)
        assert any("precondition no longer holds" in r for r in refusals(rig))
        assert rig.rem.flow.store.get(value).state == "refused"  # type: ignore[union-attr]
        final = slack_api.of("chat.update")[-1].body["text"]
        assert "precondition" in final and "no entry of a missing pod" in final


async def test_two_person_rule_refuses_the_requester(tmp_path: Path, slack_api: MockSlackApi) -> None:
    approvers = {"*": (APPROVER, REQUESTER)}
    async with slack_rig(tmp_path, slack_api, approvers=approvers, two_person_rule=True) as rig:
        value = (await rig.command(user=REQUESTER))[BUTTON][0]
        await rig.click(value, user=REQUESTER)
        assert_nothing_changed(rig)
        assert any("two-person rule" in r for r in requests(rig))
        entries = [e for e in rig.rem.flow.audit.query() if e.event == "request"]
        assert entries[-1].actor == REQUESTER and entries[-1].action == "checkpoint.clear"
        assert entries[-1].detail["first_approval"] is True
        # the requester's own Approve on the request is not the second approval either
        await rig.click(value, user=REQUESTER, action_id="approval:approve")
        assert_nothing_changed(rig)
        await rig.click(value, user=APPROVER, action_id="approval:approve")
        assert len(cluster_writes(rig.sim)) == 2
        assert json.dumps(cluster_writes(rig.sim)[0].body) == '{"spec": {"unschedulable": true}}'
