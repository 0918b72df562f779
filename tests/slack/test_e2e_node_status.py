"""End to end: a signed ``/gpu node-status`` runs the real service on the simulated zombie cluster.

Slack (HTTP mode, signed request, recording mock Web API), the bot, the Kubernetes API and the
SSH nodes all talk over real sockets; the posted answer must carry the per-node table (every GPU
node, its allocation and its cards) and the CHECKPOINT_ZOMBIE finding, inside Slack's limits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.slack.blocks import Rendered
from bot.slack.limits import escape_mrkdwn
from tests.readers import READERS
from tests.slack.helpers import slash_and_direct
from tests.slack.mock_slack_api import MockSlackApi
from tests.slack.test_blocks import assert_within_limits

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "zombie-checkpoint.yaml"
NODES = ("tcs-10-29-25-5", "tcs-10-29-25-6")


@pytest.mark.parametrize("reader", READERS)
async def test_node_status_on_the_zombie_scenario_posts_the_table_and_the_zombie(
    mock_slack: MockSlackApi, tmp_path: Path, reader: str
) -> None:
    expected = await slash_and_direct(mock_slack, SCENARIO, tmp_path, reader, "node-status")

    progress, answer, _details = mock_slack.of("chat.postMessage")
    assert "diagnosing all nodes" in progress.body["text"]
    assert answer.body["thread_ts"] == "1700000000.000001"
    blocks = answer.body["blocks"]
    assert_within_limits(Rendered(blocks=blocks, text=answer.body["text"]))

    # one compact line per node: allocation and cards, the node's problems called out
    lines = [ln for b in blocks if b["type"] == "section" for ln in b["text"]["text"].splitlines()]
    for node in NODES:
        (row,) = [ln for ln in lines if ln.startswith(f"🔴 `{node}`")]
        assert "qgpu-core 0/200" in row and "2 GPUs: 2 idle" in row
        assert row.endswith("*CHECKPOINT_ZOMBIE, LEAK_LOGICAL_NOT_PHYSICAL*"), row

    # the zombie finding, once for both nodes, with the titles the service reports
    text = json.dumps(blocks, ensure_ascii=False)
    zombies = [f for f in expected.findings if f.code == "CHECKPOINT_ZOMBIE"]
    assert len(zombies) == len(NODES)
    for finding in zombies:
        assert json.dumps(escape_mrkdwn(finding.title), ensure_ascii=False)[1:-1] in text
    assert text.count("`CHECKPOINT_ZOMBIE` on") == 1
    header = blocks[0]
    assert header["type"] == "header" and header["text"]["text"] == "🔴 all nodes"
    assert expected.verdict() in blocks[1]["text"]["text"]
    assert not mock_slack.of("files.getUploadURLExternal"), "a two-node status fits in one message"
