"""The Slack app manifest and its docs agree with the code that serves them."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.commands import commands_for
from bot.slack.app import COMMAND
from bot.slack.transport import EVENTS_PATH

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_declares_the_command_scopes_and_socket_mode() -> None:
    manifest = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text(encoding="utf-8"))
    (command,) = manifest["features"]["slash_commands"]
    assert command["command"] == COMMAND
    for subcommand in commands_for("slack"):
        assert subcommand.name in command["usage_hint"], subcommand.name
    assert len(command["usage_hint"]) <= 1000 and len(command["description"]) <= 2000
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "chat:write.public", "files:write", "usergroups:read"} <= scopes
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is True


def test_docs_give_the_http_mode_variant() -> None:
    docs = (ROOT / "docs" / "slack.md").read_text(encoding="utf-8")
    assert "deploy/slack-app-manifest.yaml" in docs
    http_variant = docs.split("### HTTP mode", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    variant = yaml.safe_load(http_variant)
    assert variant["settings"]["socket_mode_enabled"] is False
    assert variant["settings"]["interactivity"]["request_url"].endswith(EVENTS_PATH)
    assert variant["features"]["slash_commands"][0]["url"].endswith(EVENTS_PATH)
