"""The watch's snooze buttons: a click silences one problem in one channel.

Registers one action listener on the Bolt app (``watch-snooze-1h|1d|resolved``). The click is
acked first; the snooze is written to the store by ``bot.proactive.Snoozer`` (so a restart
honours it) and a thread reply says who snoozed it and until when. A value that is not
``CHOICE:FINGERPRINT`` is ignored with a log line; nothing here runs a diagnosis or an action.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import MutableMapping
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from bot.observability import log_event
from bot.proactive import SNOOZES, Snoozer
from bot.slack.app import SlackBot
from bot.slack.dedupe import request_key
from bot.slack.proactive_messages import SNOOZE_ACTION, render_snoozed

log = logging.getLogger("gpubot.slack.watch")

SNOOZE_PATTERN = re.compile(rf"^{SNOOZE_ACTION}-({'|'.join(SNOOZES)})$")
_VALUE = re.compile(rf"^({'|'.join(SNOOZES)}):([0-9a-f]{{20}})$")


def register_watch_buttons(bot: SlackBot, snoozer: Snoozer) -> None:
    """Answer the snooze buttons of the watch's messages on ``bot``."""

    @bot.app.action(SNOOZE_PATTERN)
    async def on_snooze(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], context: MutableMapping[str, Any]
    ) -> None:
        await ack()
        key = request_key("action", {**body, "action_ts": action.get("action_ts")})
        match = _VALUE.match(str(action.get("value") or ""))
        user = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id") or "")
        message_ts = str((body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts") or "")
        if match is None or not channel:
            log_event(log, "snooze click ignored: not a watch button", level=logging.WARNING, user=user)
            return
        choice, fingerprint = match.groups()

        async def snooze_and_tell() -> None:
            # the store write (SQLite, or the API with shared state) after the ack, off the loop
            until = await asyncio.to_thread(snoozer.snooze, fingerprint, channel=channel, choice=choice, by=user)
            reply = render_snoozed(user, until)
            await bot.app.client.chat_postMessage(
                channel=channel, thread_ts=message_ts or None, text=reply.text, blocks=reply.blocks
            )

        bot.after_ack_once(context, "watch-snooze", key, snooze_and_tell, kind="action")
