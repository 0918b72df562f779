"""Block Kit rendering of a ``Report``: the same findings the CLI prints, shaped for a channel.

Pure functions: a report (plus the buttons of offered remediations) in, a message out. Every
string passes through ``limits`` so the message always respects Slack's limits; what does not fit
is counted in ``Rendered.omitted`` and the caller attaches the full report as a file. This module
never calls Slack and never decides whether a remediation may be offered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.report import Finding, Remediation, Report
from bot.slack import limits as L
from bot.slack.hooks import OfferButton
from bot.slack.plaintext import describe_target
from bot.slack.tables import node_table_lines

Block = dict[str, Any]

MARKERS: dict[str, str] = {"critical": "🔴", "warning": "🟠", "info": "🔵"}
#: prefix of every remediation button's action_id (Slack wants action_ids unique within a block)
REMEDIATE_ACTION = "remediate"
#: buttons shown per finding; more are listed in the attached report
MAX_BUTTONS_PER_FINDING = 5
#: per-finding caps inside a channel message (each also below Slack's 3,000)
EXPLANATION_LIMIT = 1000
EVIDENCE_LIMIT = 2000
STEPS_LIMIT = 1500
#: total serialised size of the blocks; beyond it the rest goes to the attached file
MAX_MESSAGE_JSON = 24000
NOT_ENABLED = "remediation buttons not enabled"

#: (finding index, remediation index) -> its button; None means no offer hook is installed
Offers = Mapping[tuple[int, int], OfferButton]


@dataclass
class Rendered:
    """A message ready for chat.postMessage, and whether anything was left out of it."""

    blocks: list[Block]
    text: str
    #: findings (or table/text chunks) that did not fit; > 0 means attach the full report
    omitted: int = 0

    @property
    def truncated(self) -> bool:
        return self.omitted > 0


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": L.clip(text, L.MAX_SECTION_TEXT)}


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": L.clip(text, limit) or " ", "emoji": True}


def section(text: str, *, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": _mrkdwn(text)}
    if block_id:
        block["block_id"] = L.clip(block_id, L.MAX_ID, marker="")
    return block


def context(texts: list[str]) -> Block:
    return {"type": "context", "elements": [_mrkdwn(t) for t in texts[: L.MAX_CONTEXT_ELEMENTS]]}


def header(text: str) -> Block:
    return {"type": "header", "text": _plain(text, L.MAX_HEADER)}


def severity_marker(severity: str) -> str:
    return MARKERS.get(severity, "⚪")


def button_label(rem: Remediation) -> str:
    values = " ".join(str(v) for _, v in sorted(rem.params.items()))
    return L.clip(f"{rem.action} {values}".strip(), L.MAX_BUTTON_TEXT)


def confirm_text(rem: Remediation, blast_radius: str) -> str:
    """The dialog text: the fix in a line, then the action's own blast radius (its hazards).

    The action declares its blast radius (at most 300 characters; the offer brings it along);
    when both do not fit Slack's limit, the blast radius wins, because it is what a person must
    read before confirming.
    """
    summary = rem.summary or f"gpubot will run {rem.action}."
    radius = blast_radius
    if not radius:
        return summary
    both = f"{summary}\n{radius}"
    return both if len(both) <= L.MAX_CONFIRM_TEXT else radius


def remediation_button(rem: Remediation, offer: OfferButton, index: int) -> Block:
    """A danger button carrying only the opaque offer id, behind Slack's confirmation dialog."""
    return {
        "type": "button",
        "action_id": f"{REMEDIATE_ACTION}:{index}",
        "text": _plain(button_label(rem), L.MAX_BUTTON_TEXT),
        "value": L.clip(offer.offer_id, L.MAX_BUTTON_VALUE, marker=""),
        "style": "danger",
        "confirm": {
            "title": _plain(f"Run {rem.action}?", L.MAX_CONFIRM_TITLE),
            "text": _plain(confirm_text(rem, offer.blast_radius), L.MAX_CONFIRM_TEXT),
            "confirm": _plain("Run it", L.MAX_CONFIRM_BUTTON),
            "deny": _plain("Cancel", L.MAX_CONFIRM_BUTTON),
            "style": "danger",
        },
    }


def finding_blocks(i: int, f: Finding, offers: Offers | None) -> list[Block]:
    """Title + explanation, evidence in a code block, next steps, then the remediation buttons."""
    title = L.escape_mrkdwn(f.title)
    head = f"{severity_marker(f.severity)} *{title}*  `{f.code}`"
    if f.explanation:
        head += "\n" + L.clip(L.escape_mrkdwn(f.explanation), EXPLANATION_LIMIT)
    out = [section(head, block_id=f"finding-{i}")]
    if f.evidence:
        out.append(section(L.code_block("\n".join(f.evidence), EVIDENCE_LIMIT)))
    if f.next_steps:
        steps = "\n".join(f"• {L.escape_mrkdwn(s)}" for s in f.next_steps)
        out.append(section(L.clip_lines("*Next steps*\n" + steps, STEPS_LIMIT)))
    out.extend(_remediation_blocks(i, f, offers))
    return out


def _remediation_blocks(i: int, f: Finding, offers: Offers | None) -> list[Block]:
    if not f.remediations:
        return []
    shown = f.remediations[:MAX_BUTTONS_PER_FINDING]
    more = len(f.remediations) - len(shown)
    buttons = []
    unavailable = []
    for j, rem in enumerate(shown):
        offer = offers.get((i, j)) if offers is not None else None
        if offer:
            buttons.append(remediation_button(rem, offer, j))
        else:
            unavailable.append(f"`{L.escape_mrkdwn(button_label(rem))}`")
    out: list[Block] = []
    for start in range(0, len(buttons), L.MAX_ACTIONS_ELEMENTS):
        chunk = buttons[start : start + L.MAX_ACTIONS_ELEMENTS]
        out.append({"type": "actions", "block_id": f"remediate-{i}-{start}", "elements": chunk})
    if unavailable or more:
        why = NOT_ENABLED if offers is None else "not offered here"
        note = f"Possible fixes: {', '.join(unavailable)} ({why})" if unavailable else ""
        if more:
            note += f" {more} more in the full report."
        out.append(context([note.strip()]))
    return out


def _size(blocks: list[Block]) -> int:
    return len(json.dumps(blocks, ensure_ascii=False))


def _footer(report: Report) -> Block:
    parts = [f"cluster *{L.escape_mrkdwn(report.cluster or '-')}*", f"{report.elapsed_ms / 1000:.1f} s"]
    if report.skipped:
        skipped = "; ".join(f"{s.what} ({s.why})" for s in report.skipped)
        parts.append("skipped: " + L.escape_mrkdwn(skipped))
    return context([L.clip(" · ".join(parts), 2000)])


def render_report(report: Report, *, offers: Offers | None = None) -> Rendered:
    """The channel message for a report; groups that do not fit are counted, never half-shown."""
    target = describe_target(report)
    verdict = report.verdict()
    top = report.findings[0].severity if report.findings else ""
    marker = severity_marker(top) if top else "✅"
    blocks: list[Block] = [header(f"{marker} {target}: {verdict}")]
    groups: list[list[Block]] = [finding_blocks(i, f, offers) for i, f in enumerate(report.findings)]
    if report.nodes:
        groups += [[section(L.code_block(c))] for c in L.split_chunks(node_table_lines(report.nodes), 2900)]
    if report.text:
        lines = [L.escape_mrkdwn(x) for x in report.text.splitlines()]
        groups += [[section(c)] for c in L.split_chunks(lines, 2900)]
    footer = _footer(report)
    reserve = 2  # the footer and a "cut here" note
    budget = MAX_MESSAGE_JSON - _size([footer]) - 400
    omitted = 0
    for n, group in enumerate(groups):
        if len(blocks) + len(group) > L.MAX_BLOCKS - reserve or _size(blocks + group) > budget:
            omitted = len(groups) - n
            break
        blocks.extend(group)
    if omitted:
        note = f"_{omitted} more part(s) of this report did not fit; the full report is attached._"
        blocks.append(section(note))
    blocks.append(footer)
    fallback = L.clip(f"{target}: {verdict}", L.MAX_FALLBACK_TEXT)
    return Rendered(blocks=blocks, text=fallback, omitted=omitted)


def render_progress(target: str, user_id: str, command_text: str) -> Rendered:
    """The placeholder posted at once: who asked what, and that the answer follows in the thread."""
    shown = L.clip(L.escape_mrkdwn(command_text), 300)
    text = f"<@{user_id}> ran `/gpu {shown}`: diagnosing {L.escape_mrkdwn(target)}…"
    return Rendered(blocks=[section(text)], text=L.clip(f"diagnosing {target}…", L.MAX_FALLBACK_TEXT))


def render_summary(report: Report, *, in_thread: bool) -> Rendered:
    """What the placeholder becomes once the answer is in: the verdict, pointing at the thread."""
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    tally = ", ".join(f"{severity_marker(s)} {n} {s}" for s, n in counts.items()) or "✅ no problem found"
    target = describe_target(report)
    text = f"*{L.escape_mrkdwn(target)}*: {L.escape_mrkdwn(report.verdict())}\n{tally}"
    if in_thread:
        text += " · details in the thread"
    return Rendered(blocks=[section(text)], text=L.clip(f"{target}: {report.verdict()}", L.MAX_FALLBACK_TEXT))


def render_progress_failed(progress: Rendered, why: str) -> Rendered:
    """The placeholder after the command failed: the request stays visible, with the reason."""
    note = section(f"⚠️ {L.clip(L.escape_mrkdwn(why), 2000)}")
    return Rendered(blocks=[*progress.blocks, note], text=L.clip(why, L.MAX_FALLBACK_TEXT))


def paginate_text(text: str, *, title: str = "") -> list[Rendered]:
    """Guidance text (help, runbooks) as messages of sections, each inside every limit."""
    chunks = L.split_chunks([L.escape_mrkdwn(x) for x in text.splitlines()] or [" "], 2900)
    pages: list[Rendered] = []
    blocks: list[Block] = [header(title)] if title else []
    for chunk in chunks:
        block = section(chunk)
        if blocks and (len(blocks) >= L.MAX_BLOCKS or _size([*blocks, block]) > MAX_MESSAGE_JSON):
            pages.append(Rendered(blocks=blocks, text=L.clip(title or text, L.MAX_FALLBACK_TEXT)))
            blocks = []
        blocks.append(block)
    pages.append(Rendered(blocks=blocks, text=L.clip(title or text, L.MAX_FALLBACK_TEXT)))
    return pages
