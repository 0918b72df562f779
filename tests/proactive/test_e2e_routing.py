"""End to end: a problem goes to its namespace's channel and names the owning team, safely.

The real bot on the simulated untolerated-taint cluster: its ``research`` namespace is labelled
``team=nlp``; the watch routes ``team=nlp`` to its own channel and falls back to ``CHANNEL``.
The namespace's owner annotation becomes a mention only when it is a Slack user id, a user-group
id or a handle; markup put there by whoever can edit the namespace never reaches Slack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.proactive.routing import owner_of
from bot.settings import Settings, WatchConfig, WatchRoute, load_settings
from bot.settings.values import route_selector
from bot.sim.cluster import SimCluster
from tests.proactive.rig import CHANNEL, SCENARIOS, posts, put, started, stopped
from tests.slack.helpers import settings_for
from tests.slack.mock_slack_api import MockSlackApi

NLP = "C0NLP"


def _settings(mock: MockSlackApi, sim: SimCluster, **watch: Any) -> Settings:
    routes = (WatchRoute("team=ml", "C0ML"), WatchRoute("team=nlp,!retired", NLP))
    entry = WatchConfig(
        cluster=sim.cluster_name, channel=CHANNEL, enabled=True, pending_after_s=0.0, routes=routes, **watch
    )
    return settings_for(mock, base=sim.settings(), watch=(entry,))


def _annotate(sim: SimCluster, value: str) -> None:
    ns = sim.api.store.find("Namespace", "research")
    assert ns is not None
    put(sim, "Namespace", "research", metadata={**ns["metadata"], "annotations": {"gpubot.dev/owner": value}})


async def test_a_namespace_label_picks_the_channel_and_the_owner_is_mentioned(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(SCENARIOS / "untolerated-taint.yaml", workdir=tmp_path) as sim:
        _annotate(sim, "S0NLPTEAM")
        bot = await started(_settings(mock_slack, sim))
        try:
            (watcher,) = bot.watchers
            assert len((await watcher.check_pending()).posted) == 1
            assert posts(mock_slack, CHANNEL) == [] and posts(mock_slack, "C0ML") == []
            (message,) = posts(mock_slack, NLP)
            blocks = json.dumps(message.body["blocks"], ensure_ascii=False)
            assert "owner: <!subteam^S0NLPTEAM>" in blocks
            # the namespace is relabelled: the open problem stays in the channel it was posted to
            ns = sim.api.store.find("Namespace", "research")
            assert ns is not None
            put(sim, "Namespace", "research", metadata={**ns["metadata"], "labels": {"team": "ml"}})
            again = await watcher.check_pending()
            assert again.posted == [] and len(again.unchanged) == 1
            assert len(posts(mock_slack, NLP)) == 1 and posts(mock_slack, "C0ML") == []
        finally:
            await stopped(bot)


@pytest.mark.parametrize("value", ["<!channel> wake up", "<@U0BOSS>", "S0TEAM *bold*", "@team\nsecond line"])
async def test_an_owner_annotation_that_is_not_an_id_or_handle_never_reaches_slack(
    mock_slack: MockSlackApi, tmp_path: Path, value: str
) -> None:
    async with SimCluster.from_file(SCENARIOS / "untolerated-taint.yaml", workdir=tmp_path) as sim:
        _annotate(sim, value)
        bot = await started(_settings(mock_slack, sim))
        try:
            assert len((await bot.watchers[0].check_pending()).posted) == 1
        finally:
            await stopped(bot)
    (message,) = posts(mock_slack, NLP)
    sent = json.dumps(message.body, ensure_ascii=False)
    assert "owner:" not in sent and "<!channel>" not in sent and "U0BOSS" not in sent and "*bold*" not in sent


async def test_node_problems_go_to_the_fallback_channel(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    async with SimCluster.from_file(SCENARIOS / "leak.yaml", workdir=tmp_path) as sim:
        bot = await started(_settings(mock_slack, sim))
        try:
            assert len((await bot.watchers[0].sweep()).posted) == 2
        finally:
            await stopped(bot)
    assert len(posts(mock_slack, CHANNEL)) == 2 and posts(mock_slack, NLP) == []


def test_selectors_owners_and_route_settings_are_checked() -> None:
    assert [r.op for r in route_selector("team=ml, tier!=dev,gpu,!retired,a==b,t in (x,y)")] == [
        "=",
        "!=",
        "exists",
        "!",
        "=",
        "in",
    ]
    for bad in ("team in (ml", "", "a=b=c", "<!channel>"):
        with pytest.raises(ConfigError, match="namespace_selector"):
            route_selector(bad)
    assert [owner_of(v) for v in ("U0ABC", "W0ABC", "S0ABC", "@ml-team", " U0ABC ")] == [
        "U0ABC",
        "W0ABC",
        "S0ABC",
        "@ml-team",
        "U0ABC",
    ]
    assert [owner_of(v) for v in ("<@U0ABC>", "u0abc", "@ML TEAM", "ml-team", "S0ABC>")] == [""] * 5
    clusters = [{"name": "prod"}]
    route = {"namespace_selector": "team=ml", "channel": "C2"}
    (w,) = load_settings(
        env={}, clusters=clusters, watch=[{"cluster": "prod", "channel": "C1", "routes": [route]}]
    ).watch
    assert w.routes == (WatchRoute("team=ml", "C2"),) and w.owner_annotation == "gpubot.dev/owner"
    for routes, why in (
        ([{"namespace_selector": "team in (a", "channel": "C2"}], "namespace_selector"),
        ([{"channel": "C2"}], "routes: expected"),
        ("team=ml", "routes: expected"),
    ):
        with pytest.raises(ConfigError, match=why):
            load_settings(env={}, clusters=clusters, watch=[{"cluster": "prod", "channel": "C1", "routes": routes}])
    two = [{"cluster": "prod", "channel": "C1", "routes": [route]}, {"cluster": "prod", "channel": "C2"}]
    with pytest.raises(ConfigError, match="given twice"):
        load_settings(env={}, clusters=clusters, watch=two)
