"""Edits posted offer buttons in place and posts into report threads, for one bot process.

A click or an expiry changes only its own button: the message is edited with ``chat.update``
from the freshest blocks this process knows (those it last wrote, else the blocks Slack sent with
the click), so the report and the other offers stay. When no blocks are known (an expiry after a
restart), the status goes into the report's thread instead: the report is never wiped.

This module only sends what ``offer_messages`` words; it never decides or runs an action.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import limits as L
from bot.slack.blocks import Block
from bot.slack.offer_messages import LINE_LIMIT, replace_offer
from bot.slack.web import SLACK_FAILURES, failure_text, response_hook

log = logging.getLogger("gpubot.slack.offers")

#: report messages whose blocks this process remembers (the newest; each at most ~24 kB)
MAX_REMEMBERED = 256

MessageKey = tuple[str, str]


class OfferEditor:
    """Remembers the blocks of messages with offers, and edits one button at a time."""

    def __init__(self, client: AsyncWebClient | None) -> None:
        self.client = client
        self._blocks: OrderedDict[MessageKey, list[Block]] = OrderedDict()
        self._locks: dict[MessageKey, asyncio.Lock] = {}

    def remember(self, channel: str, ts: str, blocks: Sequence[Mapping[str, Any]]) -> None:
        """The message's blocks as they stand now (as posted, or as we last edited them)."""
        key = (channel, ts)
        self._blocks[key] = [dict(b) for b in blocks]
        self._blocks.move_to_end(key)
        while len(self._blocks) > MAX_REMEMBERED:
            old, _ = self._blocks.popitem(last=False)
            lock = self._locks.get(old)
            if lock is not None and not lock.locked():
                del self._locks[old]

    def remembered(self, channel: str, ts: str) -> list[Block] | None:
        return self._blocks.get((channel, ts))

    async def update_offers(
        self,
        channel: str,
        ts: str,
        lines: Iterable[tuple[str, str]],
        *,
        blocks: Sequence[Mapping[str, Any]] | None = None,
        thread_ts: str | None = None,
    ) -> bool:
        """Replace each ``(offer id, text)``'s button in message ``ts`` by its status line.

        One ``chat.update`` per message however many offers change (expiry sweeps them together);
        edits of one message are serialised so two clicks cannot undo each other's line. False when
        Slack took neither the edit nor the note in the thread (the caller tells the clicker).
        """
        lines = list(lines)
        if self.client is None or not channel or not ts or not lines:
            return False
        key = (channel, ts)
        async with self._locks.setdefault(key, asyncio.Lock()):
            edited: list[Block] | None = None
            for base in (self._blocks.get(key), blocks):
                if not base:
                    continue
                edited = [dict(b) for b in base]
                changed = 0
                for offer_id, text in lines:
                    replaced = replace_offer(edited, offer_id, L.clip(text, LINE_LIMIT))
                    if replaced is not None:
                        edited, changed = replaced, changed + 1
                if changed:
                    break
                edited = None
            summary = L.clip("\n".join(text for _, text in lines), L.MAX_FALLBACK_TEXT)
            if edited is None:
                return await self.post(channel, summary, thread_ts=thread_ts or ts)
            try:
                await self.client.chat_update(channel=channel, ts=ts, text=summary, blocks=edited)
            except SLACK_FAILURES as exc:
                log.warning("chat.update failed: %s", failure_text(exc))
                # the button could not be replaced: say it in the thread instead
                return await self.post(channel, summary, thread_ts=thread_ts or ts)
            self.remember(channel, ts, edited)
            return True

    async def post_blocks(
        self, channel: str, text: str, blocks: Sequence[Mapping[str, Any]], *, thread_ts: str | None = None
    ) -> str | None:
        """Post a message of ``blocks`` and remember them; its ``ts``, or ``None`` if Slack refused."""
        if self.client is None or not channel:
            return None
        kwargs: dict[str, Any] = {"channel": channel, "text": L.clip(text, L.MAX_FALLBACK_TEXT), "blocks": blocks}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            resp = await self.client.chat_postMessage(**kwargs)
        except SLACK_FAILURES as exc:
            log.warning("chat.postMessage failed: %s", failure_text(exc))
            return None
        ts = str(resp.get("ts") or "")
        if ts:
            self.remember(channel, ts, blocks)
        return ts or None

    async def edit(
        self,
        channel: str,
        ts: str,
        transform: Callable[[list[Block]], list[Block] | None],
        text: str,
    ) -> None:
        """Edit a message this process posted: ``transform`` its remembered blocks (``None``: no change)."""
        if self.client is None or not channel or not ts:
            return
        key = (channel, ts)
        async with self._locks.setdefault(key, asyncio.Lock()):
            base = self._blocks.get(key)
            edited = transform([dict(b) for b in base]) if base else None
            if edited is None:
                return
            try:
                await self.client.chat_update(
                    channel=channel, ts=ts, text=L.clip(text, L.MAX_FALLBACK_TEXT), blocks=edited
                )
            except SLACK_FAILURES as exc:
                log.warning("chat.update failed: %s", failure_text(exc))
                return
            self.remember(channel, ts, edited)

    async def post(self, channel: str, text: str, *, thread_ts: str | None = None) -> bool:
        if self.client is None or not channel:
            return False
        kwargs: dict[str, Any] = {"channel": channel, "text": L.clip(text, L.MAX_FALLBACK_TEXT)}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            await self.client.chat_postMessage(**kwargs)
        except SLACK_FAILURES as exc:
            log.warning("chat.postMessage failed: %s", failure_text(exc))
            return False
        return True

    async def ephemeral(self, response_url: str, text: str) -> None:
        if not response_url:
            return
        try:
            await response_hook(response_url, self.client).send(
                text=L.clip(text, L.MAX_FALLBACK_TEXT), response_type="ephemeral", replace_original=False
            )
        except Exception:  # noqa: BLE001 - a lost ephemeral note must not fail the click handling
            log.warning("response_url post failed")
