"""Per-user authority end to end: signed /gpu commands, each diagnosis read as the asker's identity.

``identity_map`` maps U0ALICE to the Kubernetes user alice in group ml-team, and the Slack user
group S0SRE to sre-lead. On the per-user-rbac scenario the simulator enforces its RBAC table on
impersonated requests: alice's report shows what she may read (the scheduler's message about her
pod) and names what she may not (the nodes), without inventing a cause from the missing reads;
a member of S0SRE sees everything. Someone mapped by no entry gets no diagnosis. Fixes still need
an approver and run as the bot.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.slack.identities import NOT_MAPPED
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, cluster_writes
from tests.actions.slack_rig import WHY_PENDING, button_text, mock_slack_server, slack_rig
from tests.slack.helpers import form, post, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

IDENTITIES = {"U0ALICE": {"user": "alice", "groups": ["ml-team"]}, "S0SRE": {"user": "sre-lead"}}


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        mock.usergroup_members["S0SRE"] = ["U0CAROL"]
        yield mock


def footer(rig_text: str) -> str:
    blocks = json.loads(rig_text)
    return str(blocks[-1]["elements"][0]["text"])


async def test_each_asker_reads_with_their_own_permissions(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api, name="per-user-rbac", identity_map=IDENTITIES) as rig:
        offered = await rig.command(user="U0ALICE")
        text = rig.last_report_text()
        assert "SCHED_QGPU_ALLOC_FAILED" in text
        # nothing concluded from what alice may not read: no zombie, no "namespace label missing"
        assert "CHECKPOINT_ZOMBIE" not in text and "QGPU_NS_POLICY_MISSING" not in text
        assert offered == {}
        note = footer(text)
        assert "read as *alice (ml-team)*" in note
        assert 'nodes is forbidden: User "alice" cannot list resource "nodes"' in note
        assert {entry[:2] for entry in rig.sim.api.impersonated} == {("alice", ("ml-team",))}
        assert not rig.sim.api.exec_log and not cluster_writes(rig.sim)

        # a member of the S0SRE user group reads as sre-lead, who may read everything
        offered = await rig.command(user="U0CAROL")
        text = rig.last_report_text()
        assert "CHECKPOINT_ZOMBIE" in text and "read as *sre-lead*" in footer(text)
        assert ("sre-lead", (), "list", "nodes") in rig.sim.api.impersonated
        # fixes still need an approver, and run as the bot
        await rig.click(offered[button_text("checkpoint.clear", ZOMBIE_NODE)][0], user=APPROVER)
        assert rig.sim.ssh.history(ZOMBIE_NODE)[0] == "systemctl stop kubelet"
        assert not any(entry[2] in ("patch", "update", "create", "delete") for entry in rig.sim.api.impersonated)

        # nobody maps U0EVE: no diagnosis, one line saying why
        runs_before = len(rig.sim.api.impersonated)
        body = form(slash_payload(slack_api, WHY_PENDING, user="U0EVE"))
        assert (await post(rig.app.url + "/slack/events", body, sign(body)))[0] == 200
        replies = await slack_api.wait_for(
            lambda: [c for c in slack_api.of("response_url") if c.body.get("text") == NOT_MAPPED]
        )
        assert replies[0].body["response_type"] == "ephemeral"
        await slack_api.wait_for(lambda: len(rig.app.bot.tasks) == 0)
        assert len(rig.sim.api.impersonated) == runs_before
