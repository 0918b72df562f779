"""End to end: a signed ``/gpu pending -A`` runs the real service on a simulated cluster.

Slack (HTTP mode, signed request, recording mock Web API), the bot, the Kubernetes API and the
SSH nodes talk over real sockets; the answer must be the compact list: one section per cause
with its workloads one line each, the causes the service reports, inside Slack's limits; the
placeholder becomes the summary line.
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
from tests.slack.test_escaping import pending_report

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "lab-mixed-k8s131.yaml"


@pytest.mark.parametrize("reader", READERS)
async def test_pending_posts_one_line_per_stuck_workload_by_cause(
    mock_slack: MockSlackApi, tmp_path: Path, reader: str
) -> None:
    expected = await slash_and_direct(mock_slack, SCENARIO, tmp_path, reader, "pending -A", surface="slack")

    assert expected.pending is not None and expected.pending.stuck_pods == 3
    posted = mock_slack.of("chat.postMessage")
    answer = posted[1]
    blocks = answer.body["blocks"]
    assert_within_limits(Rendered(blocks=blocks, text=answer.body["text"]))
    assert blocks[0]["type"] == "header" and "pending GPU work in all namespaces" in blocks[0]["text"]["text"]
    text = json.dumps(blocks, ensure_ascii=False)
    for group in expected.pending.groups:
        assert f"`{group.code}`" in text
        for line in group.lines:
            assert f"`{line.namespace}/{escape_mrkdwn(line.workload)}`" in text
    # the placeholder becomes the summary line
    (update,) = mock_slack.of("chat.update")
    assert expected.pending.summary().split(":")[0] in json.dumps(update.body, ensure_ascii=False)


def test_a_long_list_stays_inside_slacks_limits() -> None:
    from bot.slack.pending_blocks import render_pending

    assert_within_limits(render_pending(pending_report()))
