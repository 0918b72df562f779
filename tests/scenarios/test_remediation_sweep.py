"""Offers nobody clicks: the periodic sweep expires them and says so where their buttons were.

The report is posted through the Slack HTTP app on the zombie-checkpoint scenario; the store's
clock is a fake one, moved past the offers' expiry; ``SlackRemediation.sweep_expired`` (what ``serve``
runs every ``offer_sweep_interval_s``) must then audit each expiry and turn every button of the
message into an "expired" line with one ``chat.update``, keeping the report. After a restart,
with no blocks in memory, it says so in the report's thread instead of wiping the report.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.sim.cluster import SimCluster
from bot.slack.blocks import Rendered
from bot.slack.offer_messages import EXPIRED
from tests.actions.conftest import APPROVER, ZOMBIE_NODE, cluster_writes, scenario, state_changes
from tests.actions.slack_rig import SlackRig, button_text, buttons, mock_slack_server, slack_rig, started
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi
from tests.slack.test_blocks import assert_within_limits

REPORT_TS, PARENT_TS = "1700000000.000002", "1700000000.000001"
T0 = datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
TTL_S = 900


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def slack_api() -> AsyncIterator[MockSlackApi]:
    async with mock_slack_server() as mock:
        yield mock


def _values(offered: dict[str, list[str]]) -> set[str]:
    return {v for values in offered.values() for v in values}


async def test_sweep_expires_unclicked_offers_in_place(tmp_path: Path, slack_api: MockSlackApi) -> None:
    clock = FakeClock(T0)
    async with slack_rig(tmp_path, slack_api, action_ttl_s=TTL_S) as rig:
        rig.rem.flow.store.clock = clock
        offered = await rig.command()
        offers = _values(offered)
        assert len(offers) >= 4
        report = json.loads(json.dumps(slack_api.message("C0GPU", REPORT_TS)["blocks"]))

        clock.now = T0 + timedelta(seconds=TTL_S - 1)
        updates_before = len(slack_api.of("chat.update"))
        assert await rig.bot.slack.sweep_expired() == []
        assert len(slack_api.of("chat.update")) == updates_before

        clock.now = T0 + timedelta(seconds=TTL_S + 1)
        expired = await rig.bot.slack.sweep_expired()
        assert {r.id for r in expired} == offers
        assert all(rig.rem.flow.store.get(v).state == "expired" for v in offers)  # type: ignore[union-attr]
        updates = slack_api.of("chat.update")[updates_before:]
        assert len(updates) == 1 and updates[0].body["ts"] == REPORT_TS  # one edit for the whole message
        assert EXPIRED in updates[0].body["text"]

        final = slack_api.message("C0GPU", REPORT_TS)["blocks"]
        assert buttons(final) == {}
        lines = {
            b["block_id"].removeprefix("offer-status-"): b["elements"][0]["text"]
            for b in final
            if b.get("block_id", "").startswith("offer-status-")
        }
        assert set(lines) == offers
        assert all("expired — run the diagnosis again" in text for text in lines.values())
        assert f"*Clear the device-plugin checkpoint* on `node/{ZOMBIE_NODE}`" in " ".join(lines.values())
        unchanged = [b for b in report if b["type"] not in ("actions", "context")]
        assert [b for b in final if b["type"] != "context"] == unchanged
        assert_within_limits(Rendered(blocks=final, text=updates[0].body["text"]))

        audit = [e for e in rig.rem.flow.audit.query() if e.event == "expire"]
        assert {e.action_id for e in audit} == offers and {e.actor for e in audit} == {"gpubot"}

        # a second sweep finds nothing; a late click on the old button runs nothing
        assert await rig.bot.slack.sweep_expired() == []
        assert len(slack_api.of("chat.update")) == updates_before + 1
        await rig.click(offered[button_text("checkpoint.clear", ZOMBIE_NODE)][0], user=APPROVER)
        assert cluster_writes(rig.sim) == [] and state_changes(rig.sim) == {}


async def test_after_a_restart_the_sweep_notes_expiry_in_the_thread(tmp_path: Path, slack_api: MockSlackApi) -> None:
    clock = FakeClock(T0)
    async with SimCluster.from_file(scenario("zombie-checkpoint"), workdir=tmp_path / "sim") as sim:
        settings = settings_for(
            slack_api,
            base=sim.settings(),
            approvers={"*": (APPROVER,)},
            action_ttl_s=TTL_S,
            state_path=str(tmp_path / "state.db"),
        )
        async with started(settings, slack_api) as bot:
            bot.rem.flow.store.clock = clock
            offered = await SlackRig(sim, bot, slack_api, settings).command()
        posted = slack_api.message("C0GPU", REPORT_TS)["blocks"]
        async with started(settings, slack_api) as bot:
            bot.rem.flow.store.clock = clock
            clock.now = T0 + timedelta(seconds=TTL_S + 60)
            expired = await bot.slack.sweep_expired()
    assert {r.id for r in expired} == _values(offered)
    assert not [c for c in slack_api.of("chat.update") if c.body["ts"] == REPORT_TS]
    assert slack_api.message("C0GPU", REPORT_TS)["blocks"] == posted  # the report is never wiped
    notes = [c.body for c in slack_api.of("chat.postMessage") if EXPIRED in c.body.get("text", "")]
    assert len(notes) == 1 and notes[0]["thread_ts"] == PARENT_TS
    assert notes[0]["text"].count(EXPIRED) == len(expired)
