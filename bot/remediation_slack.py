"""What the remediation loop says in Slack: status lines in place of buttons, steps in the thread.

A report message may offer several fixes. A click or an expiry changes only its own button: the
message is edited with ``chat.update`` from the freshest blocks this process knows (those it last
wrote, else the blocks Slack sent with the click), so the report and the other offers stay. When
no blocks are known (an expiry after a restart), the status goes into the report's thread
instead: the report is never wiped. Step details always go into the thread of the report (the
"diagnosing…" placeholder's thread, not the reply's own ts).

This module only formats and sends messages; it never decides or runs an action, and never puts a
traceback, a token or user-typed text into a message.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.confirm import ClickOutcome, PendingAction
from bot.slack.blocks import Block
from bot.slack.offer_messages import replace_offer

log = logging.getLogger("gpubot.remediation")

#: Slack section text limit (we stay well below it)
SECTION_LIMIT = 2900
#: report messages whose blocks this process remembers (the newest; each at most ~24 kB)
MAX_REMEMBERED = 256
EXPIRED = "expired — run the diagnosis again"
_MRKDWN = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})

MessageKey = tuple[str, str]


def esc(text: str) -> str:
    return text.translate(_MRKDWN)


def clip(text: str, limit: int = SECTION_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_error(exc: SlackApiError) -> str:
    try:
        return str(exc.response.get("error", "unknown"))
    except Exception:  # noqa: BLE001 - a non-JSON answer (a proxy's 405 page) has no error field
        return f"HTTP {getattr(exc.response, 'status_code', '?')}"


def hms(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def what(record: PendingAction | None) -> str:
    if record is None:
        return "the action"
    return f"*{esc(record.action)}* on `{esc(record.target or '-')}`"


def running_text(record: PendingAction, user_id: str, at: datetime, *, dry_run: bool) -> str:
    dry = " (dry run: nothing will change)" if dry_run else ""
    return f":hourglass_flowing_sand: {what(record)}: approved by <@{user_id}> at {hms(at)}, running{dry}…"


def expired_text(record: PendingAction | None) -> str:
    return f":hourglass: {what(record)}: {EXPIRED}"


def final_text(outcome: ClickOutcome, user_id: str) -> str:
    """The status line once a click has ended: who approved it and how it went, in one line."""
    record = outcome.action
    if outcome.status == "expired":
        return expired_text(record)
    icon = {"succeeded": ":white_check_mark:", "failed": ":x:"}.get(outcome.status, ":no_entry_sign:")
    by = f"approved by <@{user_id}>, " if outcome.executed else ""
    summary = record.result_summary if record and record.result_summary else outcome.message
    return clip(f"{icon} {what(record)}: {by}{outcome.status.replace('_', ' ')}. {esc(summary or '')}")


def steps_text(steps: Sequence[str]) -> str:
    return clip("*Steps*\n" + "\n".join(f"{i}. {esc(s)}" for i, s in enumerate(steps, start=1)))


class OfferMessenger:
    """Edits offer buttons in place and posts into report threads, for one bot process."""

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

    async def update_offer(
        self,
        channel: str,
        ts: str,
        offer_id: str,
        text: str,
        *,
        blocks: Sequence[Mapping[str, Any]] | None = None,
        thread_ts: str | None = None,
    ) -> None:
        await self.update_offers(channel, ts, [(offer_id, text)], blocks=blocks, thread_ts=thread_ts)

    async def update_offers(
        self,
        channel: str,
        ts: str,
        lines: Iterable[tuple[str, str]],
        *,
        blocks: Sequence[Mapping[str, Any]] | None = None,
        thread_ts: str | None = None,
    ) -> None:
        """Replace each ``(offer id, text)``'s button in message ``ts`` by its status line.

        One ``chat.update`` per message however many offers change (expiry sweeps them together);
        edits of one message are serialised so two clicks cannot undo each other's line.
        """
        lines = list(lines)
        if self.client is None or not channel or not ts or not lines:
            return
        key = (channel, ts)
        async with self._locks.setdefault(key, asyncio.Lock()):
            edited: list[Block] | None = None
            for base in (self._blocks.get(key), blocks):
                if not base:
                    continue
                edited = [dict(b) for b in base]
                changed = 0
                for offer_id, text in lines:
                    replaced = replace_offer(edited, offer_id, clip(text))
                    if replaced is not None:
                        edited, changed = replaced, changed + 1
                if changed:
                    break
                edited = None
            summary = clip("\n".join(text for _, text in lines), 3000)
            if edited is None:
                await self.post(channel, summary, thread_ts=thread_ts or ts)
                return
            try:
                await self.client.chat_update(channel=channel, ts=ts, text=summary, blocks=edited)
            except SlackApiError as exc:
                log.warning("chat.update failed: %s", slack_error(exc))
                return
            self.remember(channel, ts, edited)

    async def post(self, channel: str, text: str, *, thread_ts: str | None = None) -> None:
        if self.client is None or not channel:
            return
        kwargs: dict[str, Any] = {"channel": channel, "text": clip(text, 3000)}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            await self.client.chat_postMessage(**kwargs)
        except SlackApiError as exc:
            log.warning("chat.postMessage failed: %s", slack_error(exc))

    async def ephemeral(self, response_url: str, text: str) -> None:
        if not response_url:
            return
        try:
            await AsyncWebhookClient(response_url).send(
                text=clip(text, 3000), response_type="ephemeral", replace_original=False
            )
        except Exception:  # noqa: BLE001 - a lost ephemeral note must not fail the click handling
            log.warning("response_url post failed")
