"""The shape of what Slack sends, checked before Bolt sees it.

Bolt trusts a signed body: a ``payload=`` that is not JSON, a JSON list, ``"actions": "x"`` or a
``user`` that is a number raise inside Bolt (an HTTP 500 and a traceback in the log). A signed body
is from Slack or from someone holding the signing secret; either way a malformed one is a client
error. ``shape_error`` names what is wrong in one line (the transport answers 400 and logs that
line); a well-formed body of a kind gpubot does not handle (a ``view_submission``, a shortcut, an
event it did not subscribe to, a type from a newer Slack) is acknowledged by the transport with an
empty 200, which is what Slack expects of an app that ignores it (a modal closes, nothing is
retried, no error icon), never a 404 that Slack would retry. Pure functions, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

#: fields that Bolt and gpubot's listeners read as objects when present
_OBJECTS = ("user", "channel", "container", "message", "team", "enterprise", "view", "event", "state")
#: fields that they read as strings when present
_STRINGS = ("type", "token", "team_id", "api_app_id", "trigger_id", "response_url", "command", "text",
            "user_id", "channel_id", "enterprise_id", "callback_id", "challenge")
#: an action's fields that are strings when present
_ACTION_STRINGS = ("type", "action_id", "block_id", "value", "action_ts")


class MalformedPayload(ValueError):
    """A signed request whose body is not a Slack payload; the message is one line."""


def parse(body: str, content_type: str | None) -> dict[str, Any]:
    """The body as Bolt will read it (``slack_bolt.request.internals.parse_body``), checked.

    Raises ``MalformedPayload`` naming the first thing that is wrong.
    """
    if not body:
        return {}
    if content_type == "application/json" or body.startswith("{") or body.startswith("["):
        raw, where = body, "the JSON body"
    else:
        try:
            fields = dict(parse_qsl(body, keep_blank_values=True))
        except ValueError:
            raise MalformedPayload("the form body cannot be read") from None
        if "payload" not in fields:
            return _form(fields)
        raw, where = fields["payload"], "payload"
    try:
        data: Any = json.loads(raw)
    except ValueError:
        raise MalformedPayload(f"{where} is not JSON") from None
    if not isinstance(data, dict):
        raise MalformedPayload(f"{where} is not a JSON object")
    if not isinstance(data.get("type"), str):
        raise MalformedPayload(f"{where} has no type")
    problem = shape_error(data)
    if problem:
        raise MalformedPayload(problem)
    return data


def _form(fields: dict[str, str]) -> dict[str, str]:
    """A form body: a slash command, or Slack's SSL check; anything else is not from Slack."""
    if "command" not in fields and "ssl_check" not in fields:
        raise MalformedPayload("a form body that is neither a slash command nor a payload")
    return fields


def shape_error(payload: Mapping[str, Any]) -> str:
    """What is wrong with a parsed payload, in one line; ``""`` when Bolt can read it safely."""
    for key in _OBJECTS:
        if key in payload and payload[key] is not None and not isinstance(payload[key], dict):
            return f"{key}: expected an object"
    for key in _STRINGS:
        if key in payload and payload[key] is not None and not isinstance(payload[key], str):
            return f"{key}: expected a string"
    if "authorizations" in payload and not _list_of_objects(payload["authorizations"]):
        return "authorizations: expected a list of objects"
    event = payload.get("event")
    if payload.get("type") == "event_callback" and not (isinstance(event, dict) and isinstance(event.get("type"), str)):
        return "event: expected an object with a type"
    if payload.get("type") == "block_actions":
        actions = payload.get("actions")
        if not _list_of_objects(actions) or not actions:
            return "actions: expected a non-empty list of objects"
        for n, action in enumerate(actions):
            if not isinstance(action.get("action_id"), str):
                return f"actions[{n}].action_id: expected a string"
            for key in _ACTION_STRINGS:
                if key in action and action[key] is not None and not isinstance(action[key], str):
                    return f"actions[{n}].{key}: expected a string"
    return ""


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)
