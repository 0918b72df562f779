"""Finding a message gpubot posted, by the metadata it carries, in a channel's recent history.

A post and the record of its ts are two steps; a process stopped between them leaves a record
without a ts (an intent). The next process looks here before posting again: the message, if
Slack took it, carries its key (``metadata.event_payload``) and is found in the newest
``HISTORY_PAGES`` pages of ``conversations.history`` (``channels:history``/``groups:history``).
Read-only; raises what the Web API raises, so the caller decides what an unreadable history means.
"""

from __future__ import annotations

from collections.abc import Mapping

from slack_sdk.web.async_client import AsyncWebClient

from bot.kube.objects import meta_of

#: pages of 200 messages read, newest first
HISTORY_PAGES = 5


def metadata(event_type: str, key: Mapping[str, str]) -> dict[str, object]:
    """The ``metadata`` argument of ``chat.postMessage`` that ``find_posted`` looks for."""
    return {"event_type": event_type, "event_payload": dict(key)}


async def find_posted(
    client: AsyncWebClient, channel: str, event_type: str, key: Mapping[str, str]
) -> str | None:
    """The ts of the newest message in ``channel`` whose metadata is ``event_type`` with ``key``."""
    wanted = dict(key)
    cursor: str | None = None
    for _ in range(HISTORY_PAGES):
        resp = await client.conversations_history(channel=channel, include_all_metadata=True, limit=200, cursor=cursor)
        for message in resp.get("messages") or []:
            meta = meta_of(message)
            if meta.get("event_type") == event_type and meta.get("event_payload") == wanted:
                return str(message["ts"])
        cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
        if cursor is None:
            return None
    return None
