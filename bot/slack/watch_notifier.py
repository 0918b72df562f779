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
from bot.slack.history import find_posted, metadata
from bot.slack.proactive_messages import (
    render_change,
    render_held,
    render_open,
    render_resolved,
    render_resolved_reply,
)

#: the metadata event type of a problem's message; its payload names the problem's fingerprint
PROBLEM_EVENT = "gpubot_watch_problem"
#: the metadata event type of a channel's rate-limit summary; its payload names its hour
SUMMARY_EVENT = "gpubot_watch_summary"


def _second(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def summary_key(window_start: datetime) -> dict[str, str]:
    """What identifies one hour's summary in a channel."""
    return {"window_start": _second(window_start)}


def post_key(fingerprint: str, opened_at: datetime) -> dict[str, str]:
    """What identifies one post of one problem: a problem that resolved and came back has a new
    ``opened_at``, so its old message is never taken for the new one (seconds: both stores keep them)."""
    return {"fingerprint": fingerprint, "opened_at": _second(opened_at)}


class SlackWatchNotifier:
    """Posts and edits the watch's messages through ``client``."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post_open(
        self, channel: str, problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = ""
    ) -> str:
        msg = render_open(problem, opened_at=opened_at, seen_at=seen_at, owner=owner)
        # the fingerprint rides in the message's metadata, so an interrupted post can be found again
        meta = metadata(PROBLEM_EVENT, post_key(problem.fingerprint, opened_at))
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks, metadata=meta)
        return str(resp["ts"])

    async def find_posted(self, channel: str, fingerprint: str, *, opened_at: datetime) -> str | None:
        """The message posted for the problem opened at ``opened_at``, by its metadata."""
        return await find_posted(self.client, channel, PROBLEM_EVENT, post_key(fingerprint, opened_at))

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

    async def post_summary(self, channel: str, held: list[Problem], *, limit: int, window_start: datetime) -> str:
        msg = render_held(held, limit=limit)
        meta = metadata(SUMMARY_EVENT, summary_key(window_start))
        resp = await self.client.chat_postMessage(channel=channel, text=msg.text, blocks=msg.blocks, metadata=meta)
        return str(resp["ts"])

    async def find_summary(self, channel: str, *, window_start: datetime) -> str | None:
        return await find_posted(self.client, channel, SUMMARY_EVENT, summary_key(window_start))

    async def update_summary(self, channel: str, ts: str, held: list[Problem], *, limit: int) -> None:
        msg = render_held(held, limit=limit)
        await self.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
