"""The Slack app manifests (Socket Mode and HTTP) and their docs agree with the code that serves them.

The scopes are minimal: exactly those the Web API methods the bot calls need, found by reading
the bot's source, plus ``commands``. The two manifests differ only in the mode and the URLs, and
docs/slack.md says what every scope is for.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import commands_for
from bot.slack.app import COMMAND
from bot.slack.scopes import BOT_SCOPES, SCOPE_OF
from bot.slack.transport import EVENTS_PATH

ROOT = Path(__file__).resolve().parents[2]
SOCKET = ROOT / "deploy" / "slack-app-manifest.yaml"
HTTP = ROOT / "deploy" / "slack-app-manifest-http.yaml"


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def web_api_methods_called() -> set[str]:
    """Every ``AsyncWebClient`` method called anywhere in the bot's source."""
    own = {name for name in vars(AsyncWebClient) if not name.startswith("_")}
    found: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        found |= {m for m in re.findall(r"\.([A-Za-z_0-9]+)\(", path.read_text(encoding="utf-8")) if m in own}
    return found


def test_the_scopes_are_exactly_what_the_calls_need() -> None:
    called = web_api_methods_called()
    assert {"chat_postMessage", "chat_update", "files_upload_v2"} <= called
    unknown = called - set(SCOPE_OF)
    assert not unknown, f"new Web API calls {unknown}: add their scopes to both manifests and docs/slack.md"
    needed = {"commands"}
    for method in called:
        scope = SCOPE_OF[method]
        needed |= {scope} if isinstance(scope, str) else set(scope or ())
    assert needed == BOT_SCOPES, "bot.slack.scopes.SCOPE_OF lists a method the bot no longer calls"
    for path in (SOCKET, HTTP):
        assert set(_load(path)["oauth_config"]["scopes"]["bot"]) == needed, path.name


def test_socket_mode_manifest() -> None:
    manifest = _load(SOCKET)
    (command,) = manifest["features"]["slash_commands"]
    assert command["command"] == COMMAND and "url" not in command
    for subcommand in commands_for("slack"):
        assert subcommand.name in command["usage_hint"], subcommand.name
    assert "--private" in command["usage_hint"]
    assert len(command["usage_hint"]) <= 1000 and len(command["description"]) <= 2000
    assert manifest["settings"]["interactivity"] == {"is_enabled": True}
    assert manifest["settings"]["socket_mode_enabled"] is True


def test_http_manifest_is_the_socket_one_with_urls() -> None:
    http, socket = _load(HTTP), _load(SOCKET)
    assert http["settings"]["socket_mode_enabled"] is False
    (command,) = http["features"]["slash_commands"]
    assert command["url"].startswith("https://") and command["url"].endswith(EVENTS_PATH)
    assert http["settings"]["interactivity"]["request_url"] == command["url"]
    # everything else is the same app: strip the mode-specific keys and compare
    del command["url"]
    del http["settings"]["interactivity"]["request_url"]
    expected = copy.deepcopy(socket)
    expected["settings"]["socket_mode_enabled"] = False
    assert http == expected


def test_docs_name_both_manifests_and_every_scope() -> None:
    docs = (ROOT / "docs" / "slack.md").read_text(encoding="utf-8")
    assert "deploy/slack-app-manifest.yaml" in docs and "deploy/slack-app-manifest-http.yaml" in docs
    table = docs.split("### Scopes", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z:.]+)` \| (.+?) \|$", table, re.M)}
    scopes = set(_load(SOCKET)["oauth_config"]["scopes"]["bot"]) | {"connections:write"}
    assert set(rows) == scopes, rows
    assert all(len(why) > 20 for why in rows.values())
