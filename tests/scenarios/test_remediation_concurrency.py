"""One button, many clicks; and a bot restart between the offer and the click.

50 signed clicks on one "checkpoint.clear" button at once run it exactly once. A bot restarted on
the same SQLite file (new RemediationService, Service and Slack app) still honours an offer made before
the restart; a record found running at start-up is marked interrupted, reported, never re-run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, scenario
from tests.actions.slack_rig import SlackRig, mock_slack_server, slack_rig, started
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


BUTTON = f"checkpoint.clear {ZOMBIE_NODE}"


async def test_fifty_concurrent_clicks_execute_once(tmp_path: Path, slack_api: MockSlackApi) -> None:
    async with slack_rig(tmp_path, slack_api) as rig:
        value = (await rig.command())[BUTTON][0]
        await rig.clicks(value, 50)
        history = rig.sim.ssh.history(ZOMBIE_NODE)
        assert len(history) == 3 and history[0] == "systemctl stop kubelet"
        assert len(rig.sim.api.writes) == 2
        entries = rig.rem.flow.audit.query(action_id=value)
        assert [e.event for e in entries].count("start") == 1
        assert [e.event for e in entries].count("result") == 1
        assert sum(1 for e in entries if e.event == "refuse" and "already" in str(e.detail.get("reason"))) == 49
        assert rig.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]


async def test_offer_survives_a_restart_of_the_bot(tmp_path: Path, slack_api: MockSlackApi) -> None:
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
            first = SlackRig(sim, bot, slack_api, settings)
            value = (await first.command())[BUTTON][0]
        assert sim.api.writes == []
        # a new process on the same state file
        async with started(settings, slack_api) as bot:
            second = SlackRig(sim, bot, slack_api, settings)
            await second.click(value)
            assert bot.rem.flow.store.get(value).state == "succeeded"  # type: ignore[union-attr]
        assert len(sim.ssh.history(ZOMBIE_NODE)) == 3


async def test_a_run_cut_off_by_a_restart_is_interrupted_not_rerun(tmp_path: Path, slack_api: MockSlackApi) -> None:
    state = tmp_path / "state.db"
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(slack_api, base=sim.settings(), approvers={"*": (APPROVER,)}, state_path=str(state))
        async with started(settings, slack_api) as bot:
            first = SlackRig(sim, bot, slack_api, settings)
            value = (await first.command())[BUTTON][0]
            # as if the process died mid-run: claimed, never finished
            bot.rem.flow.store.claim(value, approver=APPROVER, now=bot.rem.flow.clock())
            bot.rem.flow.store.set_message(value, channel="C0GPU", message_ts="1700000000.000002")
        async with started(settings, slack_api) as bot:
            assert bot.rem.flow.store.get(value).state == "interrupted"  # type: ignore[union-attr]
            second = SlackRig(sim, bot, slack_api, settings)
            await second.click(value)
            assert any(e.event == "interrupted" for e in bot.rem.flow.audit.query(action_id=value))
        notes = [c.body for c in slack_api.of("chat.postMessage") if "interrupted" in c.body.get("text", "")]
        assert notes and notes[0]["channel"] == "C0GPU" and notes[0]["thread_ts"] == "1700000000.000002"
        assert sim.api.writes == [] and sim.ssh.history(ZOMBIE_NODE) == []
