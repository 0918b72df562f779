"""What the proactive end-to-end tests share: the real bot on a simulator, and edits to its objects.

``started`` builds the bot as ``serve`` does (``build_bot``: the Bolt app on a real port, the real
diagnosis service reading the simulator over HTTP and SSH, the state file) and starts it;
``put`` changes one simulated object the way a controller would (a new resourceVersion, a watch
event), so the watch-fed cache and every list see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.settings import Settings, WatchConfig
from bot.sim.cluster import SimCluster
from bot.sim.store import RESOURCE_TYPES
from bot.wiring import Bot, build_bot
from tests.slack.helpers import action_payload, interaction_form, post, settings_for, sign
from tests.slack.mock_slack_api import Call, MockSlackApi

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
CHANNEL = "C0WATCH"


def watch_settings(
    mock: MockSlackApi, sim: SimCluster, *, extra: Mapping[str, Any] | None = None, **watch: Any
) -> Settings:
    """The simulator's settings with one enabled watch posting to ``CHANNEL`` (and ``extra``
    settings besides)."""
    entry = WatchConfig(cluster=sim.cluster_name, channel=CHANNEL, enabled=True, **watch)
    return settings_for(mock, base=sim.settings(), watch=(entry,), **(extra or {}))


def posts(mock: MockSlackApi, channel: str = CHANNEL) -> list[Call]:
    """Top-level messages posted to ``channel`` (thread replies are not new posts)."""
    return [c for c in mock.of("chat.postMessage") if c.body.get("channel") == channel and not c.body.get("thread_ts")]


async def started(settings: Settings) -> Bot:
    bot = build_bot(settings)
    await bot.start()
    return bot


async def stopped(bot: Bot) -> None:
    await bot.server.stop(bot.settings.shutdown_grace_s)
    await bot.close()


def put(sim: SimCluster, kind: str, name: str, namespace: str = "", **changes: Any) -> dict[str, Any]:
    """Replace top-level parts of one simulated object (``metadata=…``, ``status=…``)."""
    obj = sim.api.store.find(kind, name, namespace)
    assert obj is not None, (kind, namespace, name)
    rtype = next(rt for rt in RESOURCE_TYPES if rt.kind == kind)
    return sim.api.store.put(rtype, {**obj, **changes}).obj


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def click(mock: MockSlackApi, bot: Bot, value: str, *, channel: str = CHANNEL) -> None:
    """A snooze button click, signed, on the bot's HTTP endpoint."""
    payload = action_payload(mock, value, channel=channel, action_id=f"watch-snooze-{value.split(':')[0]}")
    body = interaction_form(payload)
    status, _, _ = await post(f"http://127.0.0.1:{bot.server.port}/slack/events", body, sign(body))
    assert status == 200
