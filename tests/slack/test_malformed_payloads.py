"""Signed but malformed Slack requests, over real HTTP to the running Bolt app (issue 29 F8).

They answered 500 with a traceback in the log. Now: what is not a Slack payload (``payload=``
that is not JSON, a JSON list, a field of the wrong type, a ``block_actions`` without actions,
no type at all) gets 400 and one warning line; a well-formed request of a kind gpubot does not
handle (a ``view_submission``, a shortcut, a type from a newer Slack) gets the empty 200 that
Slack expects from an app that ignores it, and one info line. Nothing runs, nothing is posted,
and an unsigned body is still 401 however it is shaped.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.slack.helpers import FakeService, action_payload, post, running_app, settings_for, sign
from tests.slack.mock_slack_api import MockSlackApi


def interaction(payload: Any) -> str:
    return urlencode({"payload": payload if isinstance(payload, str) else json.dumps(payload)})


def click(**changes: Any) -> dict[str, Any]:
    base = action_payload(MockSlackApi(), "offer-1")
    base.update(changes)
    return base


MALFORMED: dict[str, tuple[str, str]] = {
    "payload not JSON": (interaction("{not json"), "payload is not JSON"),
    "payload a list": (interaction([1, 2]), "not a JSON object"),
    "payload a string": (interaction('"x"'), "not a JSON object"),
    "payload without a type": (interaction({}), "has no type"),
    "actions not a list": (interaction(click(actions="x")), "actions"),
    "an action not an object": (interaction(click(actions=[1])), "actions"),
    "no actions": (interaction(click(actions=[])), "actions"),
    "action without an id": (interaction(click(actions=[{"value": "offer-1"}])), "action_id"),
    "action value an object": (interaction(click(actions=[{"action_id": "remediate:0", "value": {"a": 1}}])), "value"),
    "user a string": (interaction(click(user="U1")), "user"),
    "channel a number": (interaction(click(channel=3)), "channel"),
    "container a list": (interaction(click(container=[])), "container"),
    "JSON body a list": ("[1]", "not a JSON object"),
    "event not an object": (json.dumps({"type": "event_callback", "event": "x"}), "event"),
    "form neither command nor payload": (urlencode({"hello": "world"}), "neither a slash command"),
}

IGNORED: dict[str, str] = {
    "view_submission": interaction({"type": "view_submission", "user": {"id": "U1"}, "view": {"id": "V1"}}),
    "view_closed": interaction({"type": "view_closed", "user": {"id": "U1"}, "view": {"id": "V1"}}),
    "shortcut": interaction({"type": "shortcut", "callback_id": "x", "user": {"id": "U1"}}),
    "a type from a newer Slack": interaction({"type": "zzz_new_surface"}),
    "an unknown button": interaction(click(actions=[{"action_id": "someone-elses-button", "value": "v"}])),
    "an event nobody subscribed to": json.dumps({"type": "event_callback", "event": {"type": "app_mention"}}),
}


def headers_for(body: str) -> dict[str, str]:
    headers = sign(body)
    if body.startswith(("{", "[")):
        headers["Content-Type"] = "application/json"
    return headers


def request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("gpubot.slack", "aiohttp"))
            and r.getMessage() not in ("slack app started", "slack app stopped")]


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_a_malformed_signed_payload_is_400_in_one_line(
    case: str, mock_slack: MockSlackApi, caplog: pytest.LogCaptureFixture
) -> None:
    body, why = MALFORMED[case]
    service = FakeService()
    caplog.set_level(logging.INFO)
    async with running_app(settings_for(mock_slack), service) as app:
        status, text, _ = await post(app.url + "/slack/events", body, headers_for(body))
    assert status == 400, text
    assert why in json.loads(text)["error"] and "\n" not in text
    (record,) = request_records(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None and "\n" not in record.getMessage()
    assert record.getMessage() == "malformed payload refused" and why in record.why  # type: ignore[attr-defined]
    assert not service.runs and all(c.method == "auth.test" for c in mock_slack.calls)


@pytest.mark.parametrize("case", sorted(IGNORED))
async def test_a_well_formed_request_nothing_handles_is_acknowledged(
    case: str, mock_slack: MockSlackApi, caplog: pytest.LogCaptureFixture
) -> None:
    body = IGNORED[case]
    service = FakeService()
    caplog.set_level(logging.INFO)
    async with running_app(settings_for(mock_slack), service) as app:
        status, text, _ = await post(app.url + "/slack/events", body, headers_for(body))
    assert (status, text) == (200, "")
    (record,) = request_records(caplog)
    assert record.getMessage() == "request ignored: no handler" and record.exc_info is None
    assert not service.runs and all(c.method == "auth.test" for c in mock_slack.calls)


async def test_an_unsigned_malformed_body_is_still_401(mock_slack: MockSlackApi) -> None:
    async with running_app(settings_for(mock_slack), FakeService()) as app:
        for body, _ in MALFORMED.values():
            headers = sign(body, secret="not-the-signing-secret")
            status, _, _ = await post(app.url + "/slack/events", body, headers)
            assert status == 401, body


async def test_socket_mode_acks_a_malformed_envelope_and_drops_it(
    mock_slack: MockSlackApi, caplog: pytest.LogCaptureFixture
) -> None:
    """Over Socket Mode nothing answers 400: the envelope is acknowledged (an unacked one is sent
    again) and dropped, in one warning line, without reaching Bolt."""
    service = FakeService()
    caplog.set_level(logging.INFO)
    bad = {"type": "block_actions", "user": {"id": "U1"}, "actions": "x"}
    async with running_app(settings_for(mock_slack, mode="socket"), service):
        await mock_slack.send_envelope({"envelope_id": "env-bad", "type": "interactive", "payload": bad,
                                        "accepts_response_payload": False})
        await mock_slack.wait_for(lambda: [a for a in mock_slack.socket_acks if a["envelope_id"] == "env-bad"])
    (record,) = [r for r in request_records(caplog) if r.getMessage() == "malformed payload ignored"]
    assert record.levelno == logging.WARNING and record.exc_info is None and "actions" in record.why  # type: ignore[attr-defined]
    assert not service.runs and not [r for r in caplog.records if r.exc_info]
