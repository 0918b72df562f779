"""Posting a watch message exactly once, even when the process stops in the middle.

A post and the record of its ts are two steps, and a process can stop between them (SIGTERM
cancels a sweep mid-call, SIGKILL, a lost leader). So the record comes first: a new problem's row
is written with an empty ts (an intent, ``OpenProblem.posting``) before ``chat.postMessage``, and
the ts after. Whoever meets an intent later (the next sweep, the next process, the next leader)
asks the notifier for the message in the channel (Slack: its history, by the key in the message
metadata) and records it; only when it is not there, or the history cannot be read, is it posted
again: twice is better than never. The channel's hourly rate-limit summary gets the same
treatment. This module decides nothing about *what* to post; ``bot.proactive.watcher`` does.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal, Protocol

from bot.observability import log_event
from bot.proactive.problems import Problem
from bot.state.contracts import ProblemStore
from bot.state.records import POSTING, OpenProblem

log = logging.getLogger("gpubot.watch")

HOUR = timedelta(hours=1)


class Notifier(Protocol):
    """Where the watch's messages go (Slack: ``bot.slack.watch_notifier``)."""

    async def post_open(
        self, channel: str, problem: Problem, *, opened_at: datetime, seen_at: datetime, owner: str = ""
    ) -> str:
        """Post the problem's message (naming ``owner``, a validated user/group id or handle, when
        given); return its ts."""
        ...

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
        """Edit the message to ``after`` and reply in its thread with what changed."""
        ...

    async def resolve(
        self, channel: str, ts: str, problem: Problem, *, opened_at: datetime, resolved_at: datetime
    ) -> None:
        """Edit the message to resolved and say so in its thread."""
        ...

    async def find_posted(self, channel: str, fingerprint: str, *, opened_at: datetime) -> str | None:
        """The ts of the message posted for the problem opened at ``opened_at`` (its intent), or
        ``None``; raises when the channel's history cannot be read."""
        ...

    async def post_summary(self, channel: str, held: list[Problem], *, limit: int, window_start: datetime) -> str:
        """Post the rate-limit summary of the hour from ``window_start`` listing ``held``; return its ts."""
        ...

    async def find_summary(self, channel: str, *, window_start: datetime) -> str | None:
        """The ts of that hour's summary already in ``channel``, or ``None``; raises when the
        channel's history cannot be read."""
        ...

    async def update_summary(self, channel: str, ts: str, held: list[Problem], *, limit: int) -> None:
        """Edit the rate-limit summary to list ``held``."""
        ...


class OncePoster:
    """Posts through ``notifier`` and records in ``store``, intent first."""

    def __init__(self, store: ProblemStore, notifier: Notifier) -> None:
        self.store = store
        self.notifier = notifier

    async def open(self, problem: Problem, channel: str, *, now: datetime, owner: str) -> None:
        """Post a new problem: the intent, the post, then its ts."""
        self.store.intend(problem, channel=channel, at=now)
        ts = await self.notifier.post_open(channel, problem, opened_at=now, seen_at=now, owner=owner)
        self.store.posted(problem.fingerprint, channel=channel, message_ts=ts)

    async def finish(
        self, problem: Problem, row: OpenProblem, *, now: datetime, owner: str
    ) -> Literal["posted", "changed", "unchanged"]:
        """An intent left by a stop mid-post: record the message it became (edited to ``problem``
        if that changed since), or post it now."""
        fp = problem.fingerprint
        shown = await self.shown(row)
        if shown is None:
            ts = await self.notifier.post_open(row.channel, problem, opened_at=row.opened_at, seen_at=now, owner=owner)
            self.store.posted(fp, channel=row.channel, message_ts=ts)
            if row.digest != problem.digest:
                self.store.changed(problem, channel=row.channel, at=now)
            return "posted"
        if row.digest == problem.digest:
            return "unchanged"
        await self.notifier.update_open(
            row.channel, shown.message_ts, row.problem, problem, opened_at=row.opened_at, seen_at=now, owner=owner
        )
        self.store.changed(problem, channel=row.channel, at=now)
        return "changed"

    async def shown(self, row: OpenProblem) -> OpenProblem | None:
        """The intent with the ts of its message found in the channel (and recorded), or ``None``."""
        fp = row.problem.fingerprint
        ts = await self._earlier(self.notifier.find_posted(row.channel, fp, opened_at=row.opened_at), row.channel)
        if ts is None:
            return None
        self.store.posted(fp, channel=row.channel, message_ts=ts)
        return replace(row, message_ts=ts)

    async def summarise(self, channel: str, held: list[Problem], *, now: datetime, limit: int) -> None:
        """One summary per channel and hour: posted once (intent first), then edited when its list
        changes. Raises what the notifier raises."""
        digest = hashlib.sha256("\n".join(sorted(p.fingerprint for p in held)).encode()).hexdigest()[:16]
        known = self.store.summary(channel)
        if known is None or known[1] <= now - HOUR:
            self.store.summarised(channel, message_ts=POSTING, window_start=now, digest="")
            ts, window_start, before = "", now, ""
        else:
            ts, window_start, before = known
            if not ts:  # an earlier run stopped mid-post: is its summary there?
                found = self.notifier.find_summary(channel, window_start=window_start)
                ts = await self._earlier(found, channel) or ""
        if not ts:
            ts = await self.notifier.post_summary(channel, held, limit=limit, window_start=window_start)
        elif before != digest:
            await self.notifier.update_summary(channel, ts, held, limit=limit)
        else:
            return
        self.store.summarised(channel, message_ts=ts, window_start=window_start, digest=digest)

    @staticmethod
    async def _earlier(lookup: Awaitable[str | None], channel: str) -> str | None:
        """What ``lookup`` finds of an interrupted post in ``channel``; ``None`` when it is not
        there or the history cannot be read (then the caller posts again)."""
        try:
            ts = await lookup
        except Exception as exc:
            log_event(log, "watch: could not read the channel's history", level=logging.WARNING,
                      channel=channel, error=type(exc).__name__)
            return None
        log_event(log, "watch: an interrupted post", channel=channel, found=ts is not None)
        return ts
