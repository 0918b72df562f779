"""End to end: a signed ``/gpu why-pending`` runs the real service on the simulated zombie cluster.

Slack (HTTP mode, signed request, recording mock Web API), the bot, the Kubernetes API and the
SSH nodes all talk over real sockets; the posted blocks must carry the same findings the service
reports for the same invocation.
"""

from __future__ import annotations

import json
from pathlib import Path

from bot.commands import parse_invocation
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.slack.limits import escape_mrkdwn
from tests.slack.helpers import (
    APP_TOKEN,
    BOT_TOKEN,
    SIGNING_SECRET,
    form,
    post,
    running_app,
    sign,
    slash_payload,
)
from tests.slack.mock_slack_api import MockSlackApi

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "zombie-checkpoint.yaml"
COMMAND = "why-pending gpu-full-5d8c6-q7wz2 -n ai"


async def test_why_pending_on_the_zombie_scenario_posts_its_findings(
    mock_slack: MockSlackApi, tmp_path: Path
) -> None:
    async with SimCluster.from_file(SCENARIO, workdir=tmp_path) as sim:
        settings = sim.settings(
            slack_bot_token=BOT_TOKEN,
            slack_app_token=APP_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_mode="http",
            slack_api_url=mock_slack.api_url,
            http_host="127.0.0.1",
            http_port=0,
        )
        async with running_app(settings, Service(settings)) as app:
            body = form(slash_payload(mock_slack, COMMAND))
            status, ack, _ = await post(app.url + "/slack/events", body, sign(body))
            assert (status, ack) == (200, "")
            await mock_slack.wait_for(lambda: mock_slack.of("chat.update"), timeout=60)
        expected_service = Service(settings)
        try:
            expected = await expected_service.run(parse_invocation(COMMAND.split()))
        finally:
            await expected_service.close()

    progress, answer, details = mock_slack.of("chat.postMessage")
    assert "diagnosing pod ai/gpu-full-5d8c6-q7wz2" in progress.body["text"]
    assert answer.body["thread_ts"] == details.body["thread_ts"] == "1700000000.000001"
    blocks = json.dumps(answer.body["blocks"], ensure_ascii=False)
    by_code = {f.code: f for f in expected.findings}
    assert {"SCHED_QGPU_ALLOC_FAILED", "CHECKPOINT_ZOMBIE"} <= set(by_code)
    for finding in expected.findings:
        assert f"`{finding.code}`" in blocks
        if not finding.explained_by:  # a cause: every title; a consequence is folded under its cause
            assert json.dumps(escape_mrkdwn(finding.title), ensure_ascii=False)[1:-1] in blocks, finding.code
    # the leak and the allocation failure are what the zombie entries explain, not causes of their own
    assert {f.code: f.explained_by for f in expected.findings if f.explained_by} == {
        "LEAK_LOGICAL_NOT_PHYSICAL": "CHECKPOINT_ZOMBIE",
        "SCHED_QGPU_ALLOC_FAILED": "CHECKPOINT_ZOMBIE",
    }
    assert "*Explained by this cause*" in blocks and "_1 cause, 2 consequences_" in blocks
    header, verdict = answer.body["blocks"][:2]
    assert header["type"] == "header" and header["text"]["text"] == "🔴 pod ai/gpu-full-5d8c6-q7wz2"
    # the verdict: the root cause (the top finding), where (both nodes) and the first fix
    assert verdict["block_id"] == "verdict"
    assert expected.verdict() in verdict["text"]["text"]
    assert "*Where:* nodes tcs-10-29-25-5, tcs-10-29-25-6" in verdict["text"]["text"]
    # one section per cause: CHECKPOINT_ZOMBIE once, naming both nodes
    sections = [b["text"]["text"] for b in answer.body["blocks"] if b.get("block_id", "").startswith("finding-")]
    zombie = [t for t in sections if "CHECKPOINT_ZOMBIE" in t]
    assert len(zombie) == 1 and "tcs-10-29-25-5" in zombie[0] and "tcs-10-29-25-6" in zombie[0]
    assert len(answer.body["blocks"]) <= 15
    # the evidence, in the next reply of the thread
    evidence = json.dumps(details.body["blocks"])
    assert "PodUID 00000385" in evidence and "failed to allocate (100, 0, 1)" in evidence
    summary = json.dumps(mock_slack.of("chat.update")[0].body["blocks"], ensure_ascii=False)
    assert "details in the thread" in summary and "🔴 1 cause, 2 consequences" in summary
    assert not mock_slack.of("response_url"), "nothing went wrong, so nothing went to response_url"
