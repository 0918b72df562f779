"""What a remediation offer's button turns into: status lines in its place, steps for the thread,
and the approval request a click by someone who may not approve sends to those who may.

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

from bot.registry import ACTION_LABELS
from bot.remediation import Approvers, ClickOutcome, PendingAction
from bot.slack import limits as L
from bot.slack.blocks import REMEDIATE_ACTION, Block, context, plain, section

#: prefix of the block_id of an offer's status line (the offer id follows)
STATUS_PREFIX = "offer-status-"
#: action ids of the approval request's buttons (their value is the offer id)
APPROVE_ACTION = "approval:approve"
DENY_ACTION = "approval:deny"
#: prefix of the block_id of an approval request's buttons, then of the line replacing them
REQUEST_PREFIX = "approval-"
#: what an expired offer's line says
EXPIRED = "expired — run the diagnosis again"
#: the longest status line or thread note we send (Slack's section limit is 3,000)
LINE_LIMIT = 2900


def _hms(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _what(record: PendingAction | None) -> str:
    """``*Restart kubelet* on `node/x```: the action in the catalogue's words, and its target."""
    if record is None:
        return "the action"
    words = ACTION_LABELS.get(record.action, record.action)
    return f"*{L.escape_mrkdwn(words)}* on `{L.escape_mrkdwn(record.target or '-')}`"


def running_text(record: PendingAction, user_id: str, at: datetime, *, dry_run: bool) -> str:
    dry = " (dry run: nothing will change)" if dry_run else ""
    return f":hourglass_flowing_sand: {_what(record)}: approved by <@{user_id}> at {_hms(at)}, running{dry}…"


def expired_text(record: PendingAction | None) -> str:
    return f":hourglass: {_what(record)}: {EXPIRED}"


def denied_text(record: PendingAction | None, user_id: str) -> str:
    return f":no_entry_sign: {_what(record)}: denied by <@{user_id}>; nothing was done."


def mentions(asked: Approvers, *, besides: str = "") -> str:
    """``<!subteam^S1>, <@U2>``: the approvers, as Slack notifies them (command-line ids left out)."""
    names = [f"<!subteam^{g}>" for g in sorted(asked.groups)]
    names += [f"<@{u}>" for u in sorted(asked.users) if u != besides and not u.startswith("cli:")]
    return ", ".join(names) or "the configured approvers"


def asked_text(record: PendingAction, asked: Approvers, *, first_approval: bool, user_id: str) -> str:
    """What the clicker alone is told: who was asked, and why they could not run it themselves."""
    if first_approval:
        return (
            f"Two-person rule: your approval of {_what(record)} is recorded; asked "
            f"{mentions(asked, besides=user_id)} to second it. The report shows the result."
        )
    return f"You cannot approve {_what(record)} yourself; asked {mentions(asked)}. The report shows the result."


def approval_request_blocks(
    record: PendingAction,
    requester: str,
    asked: Approvers,
    *,
    first_approval: bool,
    blast_radius: str,
) -> list[Block]:
    """The message to the approvers: who wants what, why, and Approve / Deny.

    Under the two-person rule it says who approved already and who must second. Approve runs
    the same single-use claim as the report's button, behind the same danger confirmation.
    """
    who = mentions(asked, besides=requester if first_approval else "")
    finding = f" for `{L.escape_mrkdwn(record.finding_code)}`" if record.finding_code else ""
    if first_approval:
        text = (
            f":raised_hand: {who}: {_what(record)}{finding} needs a second approver (two-person rule).\n"
            f"*Approved by:* <@{requester}>\n*Must second:* {who} (not <@{requester}>)"
        )
    else:
        text = f":raised_hand: {who}: <@{requester}> asks to run {_what(record)}{finding}."
    confirm = {
        "title": plain(f"Run {record.action}?", L.MAX_CONFIRM_TITLE),
        "text": plain(blast_radius or f"gpubot will run {record.action}.", L.MAX_CONFIRM_TEXT),
        "confirm": plain("Run it", L.MAX_CONFIRM_BUTTON),
        "deny": plain("Cancel", L.MAX_CONFIRM_BUTTON),
        "style": "danger",
    }
    value = L.clip(record.id, L.MAX_BUTTON_VALUE, marker="")
    buttons: list[Block] = [
        {"type": "button", "action_id": APPROVE_ACTION, "text": plain("Approve", L.MAX_BUTTON_TEXT),
         "value": value, "style": "danger", "confirm": confirm},
        {"type": "button", "action_id": DENY_ACTION, "text": plain("Deny", L.MAX_BUTTON_TEXT), "value": value},
    ]
    out = [section(L.clip(text, LINE_LIMIT))]
    if blast_radius:
        out.append(context([L.clip(L.escape_mrkdwn(blast_radius), LINE_LIMIT)]))
    out.append({"type": "actions", "block_id": request_block_id(record.id), "elements": buttons})
    return out


def request_block_id(offer_id: str) -> str:
    return L.clip(REQUEST_PREFIX + offer_id, L.MAX_ID, marker="")


def settle_request(blocks: Sequence[Mapping[str, Any]], offer_id: str, text: str) -> list[Block] | None:
    """The approval request with its buttons (or its last status line) replaced by ``text``."""
    out: list[Block] = [copy.deepcopy(dict(b)) for b in blocks]
    wanted = request_block_id(offer_id)
    for i, block in enumerate(out):
        if block.get("block_id") == wanted:
            line = context([L.clip(text, L.MAX_SECTION_TEXT)])
            line["block_id"] = wanted
            out[i] = line
            return out
    return None


def final_text(outcome: ClickOutcome, user_id: str) -> str:
    """The status line once a click has ended: who approved it and how it went, in one line."""
    record = outcome.action
    if outcome.status == "expired":
        return expired_text(record)
    if outcome.status == "denied":
        return denied_text(record, user_id)
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
    what = L.escape_mrkdwn(f"{record.action} on {record.target or 'the cluster'}")
    return L.clip(
        f":warning: {what} was interrupted (the gpubot "
        f"process running it stopped) and was not re-run: {L.escape_mrkdwn(summary)}",
        LINE_LIMIT,
    )


def is_remediate_button(element: Mapping[str, Any]) -> bool:
    """A remediation button, or a node picker whose options are remediation offers."""
    action_id = str(element.get("action_id") or "")
    return element.get("type") in ("button", "static_select") and (
        action_id == REMEDIATE_ACTION or action_id.startswith(REMEDIATE_ACTION + ":")
    )


def element_offers(element: Mapping[str, Any]) -> list[str]:
    """The offer ids a remediation element carries: a button's value, a picker's option values."""
    if element.get("type") == "static_select":
        options = element.get("options") or []
        return [str(o["value"]) for o in options if isinstance(o, Mapping) and o.get("value")]
    return [str(element["value"])] if element.get("value") else []


def offer_ids_in(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The offer ids the message's remediation buttons and pickers carry, in order of appearance."""
    found: list[str] = []
    for block in blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements") or []:
            if isinstance(element, Mapping) and is_remediate_button(element):
                found += element_offers(element)
    return found


def _without_offer(element: Any, offer_id: str) -> Any | None:
    """``element`` less the offer ``offer_id``: None when it was that offer's button or the last
    option of a picker; the element itself when it does not carry it."""
    if not (isinstance(element, Mapping) and is_remediate_button(element)):
        return element
    if offer_id not in element_offers(element):
        return element
    if element.get("type") != "static_select":
        return None
    options = [
        o for o in element.get("options") or [] if not (isinstance(o, Mapping) and str(o.get("value")) == offer_id)
    ]
    return {**element, "options": options} if options else None


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
        edited = [_without_offer(e, offer_id) for e in elements]
        if all(new is old for new, old in zip(edited, elements, strict=True)):
            continue
        kept = [e for e in edited if e is not None]
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
