"""What the remediation loop leaves in the channel, and who may click, through the Slack HTTP app.

A bot restarted between the offer and the click has no memory of the message, so it edits the
blocks Slack sends with the click: the report and the other offers stay, the step details go to
the report's thread (the placeholder, not the reply). An approver named only through a Slack user
group can run an action; someone outside that group asks the group instead (audited), and nothing
changes until an approver clicks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from bot.slack.blocks import Rendered
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, cluster_writes, scenario, state_changes
from tests.actions.slack_rig import SlackRig, button_text, buttons, mock_slack_server, slack_rig, started
from tests.slack.helpers import click_payload, interaction_form, post, settings_for, sign
from tests.slack.mock_slack_api import MockSlackApi
from tests.slack.test_blocks import assert_within_limits

BUTTON = button_text("checkpoint.clear", ZOMBIE_NODE)
OTHER_NODE = "tcs-10-29-25-6"
REPORT_TS, PARENT_TS = "1700000000.000002", "1700000000.000001"
GROUP = "S0ONCALL"


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


async def test_a_restarted_bot_edits_the_blocks_the_click_carries(tmp_path: Path, slack_api: MockSlackApi) -> None:
    state = tmp_path / "state.db"
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api,
            base=sim.settings(),
            approvers={"*": (APPROVER,)},
            node_ready_timeout_s=5.0,
            state_path=str(state),
        )
        async with started(settings, slack_api) as bot:
            offered = await SlackRig(sim, bot, slack_api, settings).command()
        posted = json.dumps(slack_api.message("C0GPU", REPORT_TS)["blocks"])
        async with started(settings, slack_api) as bot:
            rig = SlackRig(sim, bot, slack_api, settings)
            assert bot.slack.messages.remembered("C0GPU", REPORT_TS) is None  # nothing cached: a new process
            record = bot.rem.flow.store.get(offered[BUTTON][0])
            assert record is not None and (record.message_ts, record.thread_ts) == (REPORT_TS, PARENT_TS)
            await rig.click(offered[BUTTON][0])
            assert bot.rem.flow.store.get(offered[BUTTON][0]).state == "succeeded"  # type: ignore[union-attr]

    final = slack_api.message("C0GPU", REPORT_TS)["blocks"]
    left = buttons(final)
    assert BUTTON not in left and offered[BUTTON] == offered[BUTTON][:1]  # one button per fix
    for label, values in offered.items():
        if label != BUTTON:
            assert left[label] == values, label
    # every report block other than the edited actions block is still there, unchanged
    kept = [b for b in json.loads(posted) if b["type"] != "actions"]
    is_line = [b.get("block_id", "").startswith("offer-status-") for b in final]
    assert [b for b, line in zip(final, is_line, strict=True) if b["type"] != "actions" and not line] == kept
    line = next(b for b in final if b.get("block_id") == f"offer-status-{offered[BUTTON][0]}")
    assert "succeeded" in line["elements"][0]["text"] and f"<@{APPROVER}>" in line["elements"][0]["text"]
    updates = [c.body for c in slack_api.of("chat.update") if c.body["ts"] == REPORT_TS]
    assert_within_limits(Rendered(blocks=final, text=updates[-1]["text"]))
    assert [("running" in u["text"], "succeeded" in u["text"]) for u in updates] == [(True, False), (False, True)]
    steps = [c.body for c in slack_api.of("chat.postMessage") if c.body.get("text", "").startswith("*Steps*")]
    assert len(steps) == 1 and steps[0]["thread_ts"] == PARENT_TS


async def test_two_offers_clicked_at_once_each_keep_their_line(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api, dry_run=True) as rig:
        offered = await rig.command()
        restart, restart_other = button_text("kubelet.restart", ZOMBIE_NODE), button_text("kubelet.restart", OTHER_NODE)
        first, second = offered[restart][0], offered[restart_other][0]
        # both clicks carry the message as it was before either was handled (as when two people
        # click at once): the second edit must still keep the first one's line
        bodies = [interaction_form(click_payload(slack_api, v, user=APPROVER)) for v in (first, second)]
        results = await asyncio.gather(*(post(rig.app.url + "/slack/events", b, sign(b)) for b in bodies))
        assert [status for status, _, _ in results] == [200, 200]
        await slack_api.wait_for(lambda: len(rig.handled) == 2, timeout=60)
        final = slack_api.message("C0GPU", REPORT_TS)["blocks"]
        lines = {b["block_id"]: b["elements"][0]["text"] for b in final if b.get("block_id", "").startswith("offer-")}
        assert set(lines) == {f"offer-status-{first}", f"offer-status-{second}"}
        assert all("succeeded" in text for text in lines.values()), lines
        left = buttons(final)
        assert restart not in left and restart_other not in left
        assert left[BUTTON] == offered[BUTTON]  # untouched offers stay clickable
        assert cluster_writes(rig.sim) == []  # dry run


async def test_an_approver_through_a_user_group_can_run_it(tmp_path: Path, slack_api: MockSlackApi) -> None:
    slack_api.usergroup_members[GROUP] = ["U0CAROL", "U0DAVE"]
    approvers = {"checkpoint.clear": (GROUP,)}
    async with slack_rig(tmp_path, slack_api, approvers=approvers) as rig:
        offered = await rig.command()
        value = offered[BUTTON][0]

        # only checkpoint.clear has approvers: the other fixes are listed without a button
        assert set(offered) == {BUTTON, button_text("checkpoint.clear", OTHER_NODE)}

        await rig.click(value, user="U0MALLORY")  # not in the group: the group is asked instead
        assert cluster_writes(rig.sim) == [] and state_changes(rig.sim) == {}
        assert rig.rem.flow.store.get(value).state == "pending"  # type: ignore[union-attr]
        asked = [e for e in rig.rem.flow.audit.query(action_id=value) if e.event == "request"]
        assert asked and asked[-1].actor == "U0MALLORY" and asked[-1].detail["asked"] == [GROUP]
        assert "U0MALLORY is not an approver" in str(asked[-1].detail["reason"])
        assert buttons(slack_api.message("C0GPU", REPORT_TS)["blocks"])[BUTTON] == offered[BUTTON]

        await rig.click(value, user="U0CAROL")
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]
        assert len(cluster_writes(rig.sim)) == 2  # cordon, uncordon
        approved = [e for e in rig.rem.flow.audit.query(action_id=value) if e.event == "approve"]
        assert approved[-1].actor == "U0CAROL" and GROUP in str(approved[-1].detail["reason"])
        lookups = [c.body.get("usergroup") for c in slack_api.of("usergroups.users.list")]
        assert lookups == [GROUP, GROUP]
        assert f"<!subteam^{GROUP}>" in json.dumps([c.body for c in slack_api.of("chat.postMessage")])
