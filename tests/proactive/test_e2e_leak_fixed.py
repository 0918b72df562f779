"""Acceptance of issue 16, end to end: a leak is posted once, stays quiet, and a confirmed fix resolves it.

``gpubot`` as ``build_bot`` wires it (remediation on, approver ``U0BOB``) on the simulated leak
cluster: the watch posts the leak and its zombie checkpoint once; three more sweeps post nothing;
then the fix goes through Slack as a person would do it: a signed ``/gpu node-status gpu-a``, the
report's ``checkpoint.clear gpu-a`` button clicked by the approver (a signed interaction), the
action running over the simulator's SSH and API. The next sweep edits both posts to resolved, and
no new message is posted.
"""

from __future__ import annotations

import json
from pathlib import Path

from bot.sim.cluster import SimCluster
from bot.state.opening import open_sqlite
from tests.actions.slack_rig import button_text, buttons
from tests.proactive.rig import CHANNEL, SCENARIOS, posts, started, stopped, watch_settings
from tests.slack.helpers import click_payload, form, interaction_form, post, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

APPROVER = "U0BOB"
ASKED_IN = "C0GPU"


#: the fix's button as the report labels it
CLEAR = button_text("checkpoint.clear", "gpu-a")


async def test_a_leak_is_posted_once_and_resolved_by_the_confirmed_fix(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(SCENARIOS / "leak.yaml", workdir=tmp_path) as sim:
        settings = watch_settings(mock_slack, sim, extra={"approvers": {"*": (APPROVER,)}, "node_ready_timeout_s": 5.0})
        bot = await started(settings)
        url = f"http://127.0.0.1:{bot.server.port}/slack/events"
        try:
            (watcher,) = bot.watchers
            first = await watcher.sweep()
            assert len(first.posted) == 2 and len(posts(mock_slack)) == 2
            for _ in range(3):
                assert (await watcher.sweep()).posted == []
            assert len(posts(mock_slack)) == 2

            body = form(slash_payload(mock_slack, "node-status gpu-a", channel=ASKED_IN))
            assert (await post(url, body, sign(body)))[0] == 200

            def with_button() -> list[str]:
                return [
                    ts
                    for (channel, ts), message in mock_slack.messages.items()
                    if channel == ASKED_IN and CLEAR in json.dumps(message.get("blocks"), ensure_ascii=False)
                ]

            (ts, *_) = await mock_slack.wait_for(with_button, timeout=60)
            await mock_slack.wait_for(lambda: len(bot.slack.tasks) == 0, timeout=60)  # offers recorded
            (value, *_) = buttons(mock_slack.message(ASKED_IN, ts)["blocks"])[CLEAR]
            click = interaction_form(click_payload(mock_slack, value, user=APPROVER))
            assert (await post(url, click, sign(click)))[0] == 200
            done = f"offer-status-{value}"

            def outcome() -> str:
                blocks = mock_slack.message(ASKED_IN, ts)["blocks"]
                return next((str(b["elements"][0]["text"]) for b in blocks if b.get("block_id") == done), "")

            await mock_slack.wait_for(lambda: "succeeded" in outcome(), timeout=60)
            assert sim.ssh.history("gpu-a")[0] == "systemctl stop kubelet"

            fixed = await watcher.sweep()
            assert sorted(fixed.resolved) == sorted(first.posted) and fixed.posted == []
        finally:
            await stopped(bot)
    assert len(posts(mock_slack)) == 2
    store = open_sqlite(settings.state_path).problems
    for fp in first.posted:
        (row,) = store.history(fp)
        assert row.resolved_at is not None
        assert mock_slack.message(CHANNEL, row.message_ts)["text"].startswith("resolved after ")
