"""The watch's messages on Slack: post once, edit in place, reply in the thread.

Implements ``bot.proactive.watcher.Notifier`` with the bot's Web API client. A Slack error
raises (the watcher then leaves the store unchanged and the next sweep tries again); the
message's words come from ``bot.slack.proactive_messages``. A problem's message carries the
problem's fingerprint in its metadata, and ``find_posted`` finds it in the channel's history
(``channels:history``/``groups:history``) after a stop between the post and its record.
"""

from __future__ import annotations

from datetime import UTC, datetime

from slack_sdk.web.async_client import AsyncWebClient

from bot.proactive.problems import Problem
from bot.slack.proactive_messages import (
    render_change,
    render_held,
    render_open,
    render_resolved,
    render_resolved_reply,
)

#: the metadata event type of a problem's message; its payload names the problem's fingerprint
PROBLEM_EVENT = "gpubot_watch_problem"
#: how much of a channel's history is read for an interrupted post (pages of 200, newest first)
HISTORY_PAGES = 5


def post_key(fingerprint: str, opened_at: datetime) -> dict[str, str]:
    """What identifies one post of one problem: a problem that resolved and came back has a new
    ``opened_at``, so its old message is never taken for the new one (seconds: both stores keep them)."""
    return {"fingerprint": fingerprint, "opened_at": opened_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


class SlackWatchNotifier:
    """Posts and edits the watch's messages through ``client``."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post_open(
        self, channel: str, problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = ""
    ) -> str:
        msg = render_open(problem, opened_at=opened_at, seen_at=seen_at, owner=owner)
        # the fingerprint rides in the message's metadata, so an interrupted post can be found again
        metadata = {"event_type": PROBLEM_EVENT, "event_payload": post_key(problem.fingerprint, opened_at)}
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks, metadata=metadata)
        return str(resp["ts"])

    async def find_posted(self, channel: str, fingerprint: str, *, opened_at: datetime) -> str | None:
        """The message posted for the problem opened at ``opened_at``, found by its metadata in
        ``channel``'s recent history (newest first, at most ``HISTORY_PAGES`` pages of 200)."""
        key = post_key(fingerprint, opened_at)
        cursor: str | None = None
        for _ in range(HISTORY_PAGES):
            resp = await self.client.conversations_history(
                channel=channel, include_all_metadata=True, limit=200, cursor=cursor
            )
            for message in resp.get("messages") or []:
                meta = message.get("metadata") or {}
                if meta.get("event_type") == PROBLEM_EVENT and meta.get("event_payload") == key:
                    return str(message["ts"])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                return None
        return None

    async def update_open(
        self,
        channel: str,
        ts: str,
        before: Problem,
        after: Problem,
        *,
        opened_at: datetime,
        seen_at: datetime,
        owner: str = "",
    ) -> None:
        msg = render_open(after, opened_at=opened_at, seen_at=seen_at, owner=owner)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
        reply = render_change(before, after)
        await self.client.chat_postMessage(channel=channel, thread_ts=ts, text=reply.text, blocks=reply.blocks)

    async def resolve(
        self, channel: str, ts: str, problem: Problem, *, opened_at: datetime, resolved_at: datetime
    ) -> None:
        msg = render_resolved(problem, opened_at=opened_at, resolved_at=resolved_at)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
        reply = render_resolved_reply(problem, opened_at=opened_at, resolved_at=resolved_at)
        await self.client.chat_postMessage(channel=channel, thread_ts=ts, text=reply.text, blocks=reply.blocks)

    async def post_summary(self, channel: str, held: list[Problem], *, limit: int) -> str:
        msg = render_held(held, limit=limit)
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks)
        return str(resp["ts"])

    async def update_summary(self, channel: str, ts: str, held: list[Problem], *, limit: int) -> None:
        msg = render_held(held, limit=limit)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
