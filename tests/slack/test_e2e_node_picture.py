"""node-status over more than twenty GPU nodes attaches a PNG of the cards, in Slack and on the CLI.

A generated 25-node cluster (simulated API and SSH nodes); a signed ``/gpu node-status`` makes the
bot upload the picture with files.upload v2 into the answer's thread, and
``gpubot node-status --png FILE`` writes the same picture to a file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.exit_codes import ExitCode
from bot.service import Service
from bot.sim.cluster import SimCluster
from bot.synth.generate import generate_scenario
from tests.slack.helpers import form, post, running_app, settings_for, sign, slash_payload
from tests.slack.mock_slack_api import MockSlackApi

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def cluster_file(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(generate_scenario(nodes=25, gpu_nodes=25, pods=80, seed=3)))  # JSON is YAML
    return path


async def test_node_status_over_many_nodes_uploads_the_picture(
    mock_slack: MockSlackApi, cluster_file: Path, tmp_path: Path
) -> None:
    async with SimCluster.from_file(cluster_file, workdir=tmp_path / "sim") as sim:
        settings = settings_for(mock_slack, base=sim.settings())
        async with running_app(settings, Service(settings)) as app:
            body = form(slash_payload(mock_slack, "node-status"))
            assert (await post(app.url + "/slack/events", body, sign(body)))[0] == 200
            await mock_slack.wait_for(lambda: mock_slack.of("files.completeUploadExternal"), timeout=60)
    (complete,) = mock_slack.of("files.completeUploadExternal")
    assert complete.body["channel_id"] == "C0GPU" and complete.body["thread_ts"] == "1700000000.000001"
    assert "25 nodes" in complete.body["files"][0]["title"]
    (upload,) = mock_slack.of("upload")
    assert upload.raw.startswith(PNG_MAGIC)
    (request,) = mock_slack.of("files.getUploadURLExternal")
    assert request.body["filename"] == "gpubot-node-status.png" and int(request.body["length"]) == len(upload.raw)


async def test_a_few_nodes_get_no_picture(mock_slack: MockSlackApi, tmp_path: Path) -> None:
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "zombie-checkpoint.yaml"
    async with SimCluster.from_file(scenario, workdir=tmp_path) as sim:
        settings = settings_for(mock_slack, base=sim.settings())
        async with running_app(settings, Service(settings)) as app:
            body = form(slash_payload(mock_slack, "node-status"))
            await post(app.url + "/slack/events", body, sign(body))
            await mock_slack.wait_for(lambda: mock_slack.of("chat.update"), timeout=60)
            await mock_slack.wait_for(lambda: len(app.bot.tasks) == 0)
    assert not mock_slack.of("files.getUploadURLExternal")


def test_the_cli_writes_the_picture(cluster_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cards.png"
    assert main(["node-status", "--scenario", str(cluster_file), "--png", str(out)]) in (ExitCode.OK, ExitCode.FINDINGS)
    assert out.read_bytes().startswith(PNG_MAGIC)
    printed = capsys.readouterr()
    assert "gpu-" in printed.out and f"picture: {out}" in printed.err
