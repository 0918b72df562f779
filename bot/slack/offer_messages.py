"""What a remediation offer's button turns into: status lines in its place, steps for the thread.

A report message can carry several remediation buttons (one per node, several per finding).
When one is clicked, or its offer expires, only that button may change: the report, and the other
offers, must stay as they were so a second fix can still be approved from the same message. These
pure functions take the message's blocks and return edited copies, and word the status lines
(who approved, how it ended, that it expired). They never call Slack, never decide whether an
action may run, never mutate the blocks they are given, and never put a traceback, a token or
user-typed text into a line.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.remediation import ClickOutcome, PendingAction
from bot.slack import limits as L
from bot.slack.blocks import REMEDIATE_ACTION, Block, context

#: prefix of the block_id of an offer's status line (the offer id follows)
STATUS_PREFIX = "offer-status-"
#: what an expired offer's line says
EXPIRED = "expired — run the diagnosis again"
#: the longest status line or thread note we send (Slack's section limit is 3,000)
LINE_LIMIT = 2900


def _hms(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _what(record: PendingAction | None) -> str:
    if record is None:
        return "the action"
    return f"*{L.escape_mrkdwn(record.action)}* on `{L.escape_mrkdwn(record.target or '-')}`"


def running_text(record: PendingAction, user_id: str, at: datetime, *, dry_run: bool) -> str:
    dry = " (dry run: nothing will change)" if dry_run else ""
    return f":hourglass_flowing_sand: {_what(record)}: approved by <@{user_id}> at {_hms(at)}, running{dry}…"


def expired_text(record: PendingAction | None) -> str:
    return f":hourglass: {_what(record)}: {EXPIRED}"


def final_text(outcome: ClickOutcome, user_id: str) -> str:
    """The status line once a click has ended: who approved it and how it went, in one line."""
    record = outcome.action
    if outcome.status == "expired":
        return expired_text(record)
    icon = {"succeeded": ":white_check_mark:", "failed": ":x:"}.get(outcome.status, ":no_entry_sign:")
    by = f"approved by <@{user_id}>, " if outcome.executed else ""
    summary = record.result_summary if record and record.result_summary else outcome.message
    status = outcome.status.replace("_", " ")
    return L.clip(f"{icon} {_what(record)}: {by}{status}. {L.escape_mrkdwn(summary or '')}", LINE_LIMIT)


def steps_text(steps: Sequence[str]) -> str:
    lines = "\n".join(f"{i}. {L.escape_mrkdwn(s)}" for i, s in enumerate(steps, start=1))
    return L.clip("*Steps*\n" + lines, LINE_LIMIT)


def interrupted_text(record: PendingAction) -> str:
    """What a run cut off by a restart (or a lost replica) became: restored, never re-run."""
    summary = record.result_summary or "check the target's state by hand"
    return L.clip(
        f":warning: {record.action} on {record.target or 'the cluster'} was interrupted (the gpubot "
        f"process running it stopped) and was not re-run: {L.escape_mrkdwn(summary)}",
        LINE_LIMIT,
    )


def is_remediate_button(element: Mapping[str, Any]) -> bool:
    action_id = str(element.get("action_id") or "")
    return element.get("type") == "button" and (
        action_id == REMEDIATE_ACTION or action_id.startswith(REMEDIATE_ACTION + ":")
    )


def offer_ids_in(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The offer ids the message's remediation buttons carry, in order of appearance."""
    found: list[str] = []
    for block in blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements") or []:
            if isinstance(element, Mapping) and is_remediate_button(element) and element.get("value"):
                found.append(str(element["value"]))
    return found


def status_block_id(offer_id: str) -> str:
    return L.clip(STATUS_PREFIX + offer_id, L.MAX_ID, marker="")


def status_block(offer_id: str, text: str) -> Block:
    """The line that stands where the button was: who approved it, then how it ended."""
    block = context([L.clip(text, L.MAX_SECTION_TEXT)])
    block["block_id"] = status_block_id(offer_id)
    return block


def replace_offer(blocks: Sequence[Mapping[str, Any]], offer_id: str, text: str) -> list[Block] | None:
    """``blocks`` with the button carrying ``offer_id`` replaced by a status line saying ``text``.

    A second call for the same offer (the outcome after "running") rewrites that status line.
    The other buttons of the same actions block stay; status lines follow the block in the order
    they were added, and an actions block left without buttons disappears. When an extra line would break
    Slack's 50-block limit, the whole actions block gives way to the line (its other buttons are
    lost, the report is not). ``None``: neither the button nor its status line is in ``blocks``.
    """
    out: list[Block] = [copy.deepcopy(dict(b)) for b in blocks]
    wanted = status_block_id(offer_id)
    for i, block in enumerate(out):
        if block.get("block_id") == wanted:
            out[i] = status_block(offer_id, text)
            return out
    for i, block in enumerate(out):
        if block.get("type") != "actions":
            continue
        elements = list(block.get("elements") or [])
        kept = [
            e
            for e in elements
            if not (isinstance(e, Mapping) and is_remediate_button(e) and str(e.get("value")) == offer_id)
        ]
        if len(kept) == len(elements):
            continue
        line = status_block(offer_id, text)
        if kept and len(out) + 1 > L.MAX_BLOCKS:
            out[i] = line
            return out
        if kept:
            block["elements"] = kept
            at = i + 1
        else:
            del out[i]
            at = i
        while at < len(out) and str(out[at].get("block_id") or "").startswith(STATUS_PREFIX):
            at += 1
        out.insert(at, line)
        return out
    return None
