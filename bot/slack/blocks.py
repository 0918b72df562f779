"""Block Kit rendering of a ``Report``: the same findings the CLI prints, shaped for a channel.

A report reads by cause (``bot.views.groups``): a header naming the target, one verdict line
(the root cause, where, the fix to try first), then one section per cause naming every object it
was found on, each followed by one button per distinct fix it offers, least invasive first.
node-status adds one line per node with its problems called out. The evidence goes into a second
message (``render_details``) posted under the report, so the report itself stays short.

Pure functions: a report (plus the buttons of offered remediations) in, a message out. Every
string passes through ``limits`` so the message always respects Slack's limits; what does not fit
is counted in ``Rendered.omitted`` and the caller attaches the full report as a file. This module
never calls Slack and never decides whether a remediation may be offered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.registry import ACTION_LABELS, action_label
from bot.report import CardRow, Remediation, Report, skip_pairs
from bot.slack import limits as L
from bot.slack.block_kit import (
    MAX_MESSAGE_JSON,
    Block,
    Rendered,
    context,
    header,
    plain,
    section,
    severity_marker,
)
from bot.slack.hooks import OfferButton
from bot.slack.plaintext import describe_target
from bot.slack.tables import logical_summary
from bot.views.groups import (
    WHERE_NAMES_SHOWN,
    FindingGroup,
    Fix,
    FixKey,
    Verdict,
    counts_text,
    fix_text,
    group_findings,
    node_problems,
    verdict,
)

#: prefix of every remediation button's action_id (Slack wants action_ids unique within a block)
REMEDIATE_ACTION = "remediate"
#: buttons shown per cause (one per distinct fix); more are listed in the attached report
MAX_BUTTONS_PER_GROUP = 12
#: an action offered on this many targets or more is one node picker, not a button per target
PICKER_FROM = 2
#: Slack's static_select: at most 100 options, placeholder 150 characters, option text 75
MAX_PICKER_OPTIONS = 100
MAX_PLACEHOLDER = 150
#: titles listed under a cause found on several objects; the rest are in the details
MAX_TITLES_PER_GROUP = 5
#: per-cause caps inside a channel message (together below Slack's 3,000 per section)
EXPLANATION_LIMIT = 700
STEPS_LIMIT = 1200
FIXES_LIMIT = 400
CONSEQUENCES_LIMIT = 500
VERDICT_LIMIT = 1200
#: where the rest of a cut fix list is: the buttons and menus under the section
MORE_BELOW = "\n… (more in the buttons below)"
#: evidence of one cause in the details message
EVIDENCE_LIMIT = 2900
#: sections per details message
DETAILS_BLOCKS = 20
#: the pod's story under the verdict: events shown, characters per line and in all
STORY_EVENTS = 4
STORY_LINE_CHARS = 300
STORY_CHARS = 1500
NOT_ENABLED = "remediation buttons not enabled"
#: the dialog's confirm button: an approver's click runs the fix, anyone else's asks the approvers
CONFIRM_LABEL = "Run it / ask approvers"
NOT_OFFERED = "nobody here may approve it, or it cannot be offered"
PRIVATE_NOTE = "buttons only in answers the channel sees: run it without --private"
DETAILS_NOTE = "🔎 The evidence for each cause follows in the next message."

#: a distinct fix -> its button; None means no offer hook is installed
Offers = Mapping[FixKey, OfferButton]


def button_label(rem: Remediation) -> str:
    """``Restart qgpu-manager · tcs-10-29-25-5``: the catalogue's words for the action, its target."""
    return L.clip(action_label(rem.action, rem.params), L.MAX_BUTTON_TEXT)


def cards_summary(gpus: list[CardRow]) -> str:
    """``2 GPUs: 1 busy, 1 idle``."""
    counts: dict[str, int] = {}
    for g in gpus:
        counts[g.verdict] = counts.get(g.verdict, 0) + 1
    states = ", ".join(f"{n} {state}" for state, n in counts.items())
    return f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {states}"


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


def _confirm(rem: Remediation, blast_radius: str) -> dict[str, Any]:
    return {
        "title": plain(f"Run {rem.action}?", L.MAX_CONFIRM_TITLE),
        "text": plain(confirm_text(rem, blast_radius), L.MAX_CONFIRM_TEXT),
        "confirm": plain(CONFIRM_LABEL, L.MAX_CONFIRM_BUTTON),
        "deny": plain("Cancel", L.MAX_CONFIRM_BUTTON),
        "style": "danger",
    }


def remediation_button(rem: Remediation, offer: OfferButton, index: int) -> Block:
    """A danger button carrying only the opaque offer id, behind Slack's confirmation dialog."""
    return {
        "type": "button",
        "action_id": f"{REMEDIATE_ACTION}:{index}",
        "text": plain(button_label(rem), L.MAX_BUTTON_TEXT),
        "value": L.clip(offer.offer_id, L.MAX_BUTTON_VALUE, marker=""),
        "style": "danger",
        "confirm": _confirm(rem, offer.blast_radius),
    }


def remediation_picker(offered: list[tuple[Fix, OfferButton]], index: int) -> Block:
    """One action offered on many targets: a menu "Restart kubelet on… (6 nodes)" whose options
    carry one offer id each, behind the same confirmation dialog as a button (Slack shows it once
    an option is picked). The option text is the button's label, so every target reads the same."""
    first, offer = offered[0]
    kinds = {"node" if "node" in f.remediation.params else "target" for f, _ in offered}
    noun = kinds.pop() if len(kinds) == 1 else "target"
    words = ACTION_LABELS.get(first.action, first.action)
    options = [
        {"text": plain(button_label(f.remediation), L.MAX_BUTTON_TEXT),
         "value": L.clip(o.offer_id, L.MAX_BUTTON_VALUE, marker="")}
        for f, o in offered[:MAX_PICKER_OPTIONS]
    ]
    return {
        "type": "static_select",
        "action_id": f"{REMEDIATE_ACTION}:{index}",
        "placeholder": plain(f"{words} on… ({len(offered)} {noun}s)", MAX_PLACEHOLDER),
        "options": options,
        "confirm": _confirm(first.remediation, offer.blast_radius),
    }


def _title_lines(group: FindingGroup) -> str:
    """The group's head: the lead title when found once, else the code, where, and each title."""
    marker = severity_marker(group.severity)
    if len(group.findings) == 1:
        head = f"{marker} *{L.escape_mrkdwn(group.lead.title)}*  `{group.code}`"
        if group.subjects and not group.subjects[0].startswith("pod/"):
            head += f"\n_on {L.escape_mrkdwn(group.where(WHERE_NAMES_SHOWN))}_"
        return head
    titles = group.titles
    shown = titles[:MAX_TITLES_PER_GROUP]
    where = group.where(WHERE_NAMES_SHOWN) or f"{len(titles)} objects"
    lines = [f"{marker} `{group.code}` on *{L.escape_mrkdwn(where)}*"]
    lines += [f"• {L.escape_mrkdwn(t)}" for t in shown]
    if len(titles) > len(shown):
        lines.append(f"• … and {len(titles) - len(shown)} more (listed in the details)")
    return "\n".join(lines)


def _fix_list(group: FindingGroup) -> str:
    """The group's fixes by action, least invasive first: the first is the verdict's fix."""
    lines = [f"{i}. {L.escape_mrkdwn(fix_text(same))}" for i, same in enumerate(group.actions(), 1)]
    return "*Fix, least invasive first*\n" + "\n".join(lines) if lines else ""


def _consequence_lines(group: FindingGroup) -> str:
    """What this cause explains, one line each; their evidence is in the thread."""
    lines = []
    for c in group.consequences:
        where = f" on {L.escape_mrkdwn(c.where(WHERE_NAMES_SHOWN))}" if len(c.findings) > 1 else ""
        lines.append(f"• {severity_marker(c.severity)} `{c.code}`{where}: {L.escape_mrkdwn(c.lead.title)}")
    if not lines:
        return ""
    return "*Explained by this cause* (evidence in the thread)\n" + "\n".join(lines)


def group_blocks(
    n: int,
    group: FindingGroup,
    offers: Offers | None,
    *,
    max_buttons: int = MAX_BUTTONS_PER_GROUP,
    why_none: str = NOT_ENABLED,
) -> list[Block]:
    """One cause: its head, explanation, fixes, next steps and what it explains in one section,
    then its fix buttons."""
    text = _title_lines(group)
    if group.explanation:
        text += "\n" + L.clip_prose(L.escape_mrkdwn(group.explanation), EXPLANATION_LIMIT)
    fixes = _fix_list(group)
    if fixes:
        text += "\n" + L.clip_lines(fixes, FIXES_LIMIT, marker=MORE_BELOW)
    if group.next_steps:
        steps = "\n".join(f"• {L.escape_mrkdwn(s)}" for s in group.next_steps)
        text += "\n" + L.clip_lines("*Next steps*\n" + steps, STEPS_LIMIT, marker="\n" + L.MORE_IN_THREAD)
    folded = _consequence_lines(group)
    if folded:
        text += "\n" + L.clip_lines(folded, CONSEQUENCES_LIMIT, marker="\n" + L.MORE_IN_THREAD)
    out = [section(L.clip_lines(text, L.MAX_SECTION_TEXT, marker="\n" + L.MORE_IN_THREAD), block_id=f"finding-{n}")]
    out.extend(_fix_blocks(n, group.fixes, offers, max_buttons, why_none))
    return out


def _fix_blocks(n: int, fixes: list[Fix], offers: Offers | None, max_buttons: int, why_none: str) -> list[Block]:
    """Per action, in fix order: a button for one target, a node picker for many (one actions
    row per action); fixes without an offer are named in one line."""
    if not fixes:
        return []
    shown = fixes[:max_buttons]
    more = len(fixes) - len(shown)
    by_action: dict[str, list[tuple[Fix, OfferButton]]] = {}
    unavailable = []
    for fix in shown:
        offer = offers.get(fix.key) if offers is not None else None
        if offer:
            by_action.setdefault(fix.action, []).append((fix, offer))
        else:
            unavailable.append(f"`{L.escape_mrkdwn(button_label(fix.remediation))}`")
    out: list[Block] = []
    index = 0
    for row, offered in enumerate(by_action.values()):
        elements: list[Block] = []
        if len(offered) >= PICKER_FROM:
            elements.append(remediation_picker(offered, index))
            index += 1
        else:
            for fix, offer in offered:
                elements.append(remediation_button(fix.remediation, offer, index))
                index += 1
        out.append({"type": "actions", "block_id": f"remediate-{n}-{row}", "elements": elements})
    if unavailable or more:
        if offers is None:  # no fix has a button here: the list above names them, once
            note = f"No buttons: {why_none}; `gpubot act` runs the fixes above from a shell."
        else:
            note = f"Without a button: {', '.join(unavailable)} ({NOT_OFFERED})" if unavailable else ""
        if more:
            note += f" {more} more in the full report."
        out.append(context([L.clip(note.strip(), L.MAX_SECTION_TEXT)]))
    return out


def _size(blocks: list[Block]) -> int:
    return len(json.dumps(blocks, ensure_ascii=False))


def _footer(report: Report) -> Block:
    parts = [f"cluster *{L.escape_mrkdwn(report.cluster or '-')}*", f"{report.elapsed_ms / 1000:.1f} s"]
    if report.read_as:
        parts.append(f"read as *{L.escape_mrkdwn(report.read_as)}*")
    if report.skipped:
        skipped = "; ".join(f"{what} ({why})" for what, why in skip_pairs(report.skipped))
        parts.append("not read: " + L.escape_mrkdwn(skipped))
    return context([L.clip(" · ".join(parts), 2000)])


def verdict_block(v: Verdict) -> Block:
    """The one line on top: what could not be read (first), the root cause, where, and the fix
    to try first."""
    lines = [f"*Incomplete:* {L.escape_mrkdwn(v.incomplete)}"] if v.incomplete else []
    if v.cause:
        lines.append(f"*{v.cause_label}:* {L.escape_mrkdwn(v.cause)}")
    elif v.incomplete:
        lines.append("_Nothing was concluded from what could not be read._")
    text = "\n".join(lines)
    extra = []
    if v.where:
        extra.append(f"*Where:* {L.escape_mrkdwn(v.where)}")
    if v.fix:
        extra.append(f"*{'Fix first' if v.problem else 'Next'}:* {L.escape_mrkdwn(v.fix)}")
    if extra:
        text += "\n" + " · ".join(extra)
    if v.counts:
        text += f"\n_{L.escape_mrkdwn(v.counts)}_"
    return section(L.clip_prose(text, VERDICT_LIMIT), block_id="verdict")


def story_block(report: Report) -> Block:
    """The pod's own story under the verdict, small: a context block of at most ``STORY_CHARS``."""
    lines = report.story.lines(max_events=STORY_EVENTS) if report.story is not None else []
    text = L.clip_lines("\n".join(L.escape_mrkdwn(L.clip(x, STORY_LINE_CHARS)) for x in lines), STORY_CHARS)
    return context(["*What the API says:*\n" + text])


def node_lines(report: Report) -> list[str]:
    """node-status in one line per node: its allocation and cards, its problems called out."""
    lines = []
    for row in report.nodes:
        problems = node_problems(row, report.findings)
        marker = "🔴" if problems else "✅"
        parts = [f"{marker} `{L.escape_mrkdwn(row.node)}`", L.escape_mrkdwn(logical_summary(row.logical))]
        if row.gpus:
            parts.append(L.escape_mrkdwn(cards_summary(row.gpus)))
        if problems:
            parts.append("*" + L.escape_mrkdwn(", ".join(problems)) + "*")
        lines.append(" · ".join(parts))
    return lines


def render_report(report: Report, *, offers: Offers | None = None, private: bool = False) -> Rendered:
    """The channel message for a report: the verdict, then one part per cause (with its fix
    buttons); evidence goes into ``render_details``. Parts that do not fit are counted, never
    half-shown. ``private``: only the asker sees it, so fixes are named without buttons and
    nothing can be attached."""
    if report.pending is not None:
        from bot.slack.pending_blocks import render_pending

        return render_pending(report)
    why_none = PRIVATE_NOTE if private else NOT_ENABLED
    target = describe_target(report)
    found = verdict(report)
    troubled = sum(1 for row in report.nodes if node_problems(row, report.findings))
    if found:
        title = f"{severity_marker(found.severity)} {target}"
    elif troubled:
        title = f"{severity_marker('warning')} {target}: {troubled} of {len(report.nodes)} node(s) need a look"
    else:
        title = f"✅ {target}: no problem found"
    blocks: list[Block] = [header(title)]
    if found:
        blocks.append(verdict_block(found))
    if report.story is not None:
        blocks.append(story_block(report))
    causes = group_findings(report.findings)
    footer = _footer(report)
    tail = [context([DETAILS_NOTE])] if any(f.evidence for f in report.findings) else []
    reserve = 2 + len(tail)  # the footer, the details note and a "cut here" note
    budget = MAX_MESSAGE_JSON - _size([footer, *tail]) - 400
    if causes:
        # the root cause is never cut: with huge offers it keeps as many buttons as fit
        first = group_blocks(0, causes[0], offers, why_none=why_none)
        buttons = MAX_BUTTONS_PER_GROUP
        while buttons > 0 and _size(blocks + first) > budget:
            buttons //= 2
            first = group_blocks(0, causes[0], offers, max_buttons=buttons, why_none=why_none)
        blocks.extend(first)
    groups: list[list[Block]] = []
    if report.nodes:
        groups += [[section(c)] for c in L.split_chunks(node_lines(report), 2900)]
    groups += [group_blocks(n, g, offers, why_none=why_none) for n, g in enumerate(causes) if n > 0]
    if report.text:
        lines = [L.escape_mrkdwn(x) for x in report.text.splitlines()]
        groups += [[section(c)] for c in L.split_chunks(lines, 2900)]
    omitted = 0
    for n, group in enumerate(groups):
        if len(blocks) + len(group) > L.MAX_BLOCKS - reserve or _size(blocks + group) > budget:
            omitted = len(groups) - n
            break
        blocks.extend(group)
    if omitted:
        where = "run it without --private to get it as a file" if private else "the full report is attached"
        blocks.append(section(f"_{omitted} more part(s) of this report did not fit; {where}._"))
    blocks.extend(tail)
    blocks.append(footer)
    headline = found.text() if found else "no problem found"
    fallback = L.fallback(f"{target}: {headline}")
    return Rendered(blocks=blocks, text=fallback, omitted=omitted)


def render_details(report: Report) -> list[Rendered]:
    """The evidence of every cause, for the thread under the report: one section per cause, as
    many messages as it takes (each inside every limit); empty when there is no evidence."""
    sections: list[Block] = []
    for group in group_findings(report.findings):
        for member in (group, *group.consequences):
            sections += _detail_sections(member)
    target = describe_target(report)
    pages: list[Rendered] = []
    blocks: list[Block] = []
    for block in sections:
        if blocks and (len(blocks) >= DETAILS_BLOCKS or _size([*blocks, block]) > MAX_MESSAGE_JSON):
            pages.append(Rendered(blocks=blocks, text=L.fallback(f"evidence: {target}")))
            blocks = []
        blocks.append(block)
    if blocks:
        pages.append(Rendered(blocks=blocks, text=L.fallback(f"evidence: {target}")))
    return pages


def _detail_sections(group: FindingGroup) -> list[Block]:
    """A group's evidence for the thread, and its full explanation and steps when the report
    message had to cut them ("… (more in the thread)" points here)."""
    out: list[Block] = []
    where = f" on {L.escape_mrkdwn(group.where())}" if group.where() else ""
    why = f" (explained by `{group.explained_by}`)" if group.explained_by else ""
    prefix = f"{severity_marker(group.severity)} `{group.code}`{where}{why}\n"
    if group.evidence:
        out.append(section(L.code_block("\n".join(group.evidence), EVIDENCE_LIMIT, prefix=prefix)))
    steps = "\n".join(f"• {L.escape_mrkdwn(s)}" for s in group.next_steps)
    cut = len(L.escape_mrkdwn(group.explanation)) > EXPLANATION_LIMIT or len("*Next steps*\n" + steps) > STEPS_LIMIT
    if cut and not group.explained_by:
        full = f"{prefix}{L.escape_mrkdwn(group.explanation)}\n*Next steps*\n{steps}"
        out += [section(chunk) for chunk in L.split_chunks(full.splitlines(), 2900)]
    return out


def render_progress(target: str, user_id: str, command_text: str, *, queued: int | None = None) -> Rendered:
    """The placeholder posted at once: who asked what, and that the answer follows in the thread.
    ``queued``: the diagnosis waits for a free slot, at that place in line (``None``: it runs)."""
    shown = L.clip(L.escape_mrkdwn(command_text), 300)
    state = "diagnosing" if queued is None else f"queued (#{queued} in line), then diagnosing"
    text = f"<@{user_id}> ran `/gpu {shown}`: {state} {L.escape_mrkdwn(target)}…"
    return Rendered(blocks=[section(text)], text=L.fallback(f"{state} {target}…"))


def render_summary(report: Report, *, in_thread: bool) -> Rendered:
    """What the placeholder becomes once the answer is in: the verdict, pointing at the thread."""
    if report.pending is not None:
        from bot.slack.pending_blocks import pending_summary_text

        note = " · the list is in the thread" if in_thread else ""
        line = pending_summary_text(report) + note
        return Rendered(blocks=[section(L.clip(line, L.MAX_SECTION_TEXT))], text=L.fallback(line))
    groups = group_findings(report.findings)
    tally = f"{severity_marker(groups[0].severity)} {counts_text(groups)}" if groups else "✅ no problem found"
    target = describe_target(report)
    found = verdict(report)
    headline = found.text() if found else "no problem found"
    text = f"*{L.escape_mrkdwn(target)}*: {L.escape_mrkdwn(headline)}\n{tally}"
    if in_thread:
        text += " · details in the thread"
    return Rendered(
        blocks=[section(L.clip_prose(text, L.MAX_SECTION_TEXT))], text=L.fallback(f"{target}: {headline}")
    )


def render_progress_failed(progress: Rendered, why: str) -> Rendered:
    """The placeholder after the command failed: the request stays visible, with the reason."""
    note = section(f"⚠️ {L.clip(L.escape_mrkdwn(why), 2000)}")
    return Rendered(blocks=[*progress.blocks, note], text=L.fallback(why))


def paginate_text(text: str, *, title: str = "") -> list[Rendered]:
    """Guidance text (help, runbooks) as messages of sections, each inside every limit."""
    chunks = L.split_chunks([L.escape_mrkdwn(x) for x in text.splitlines()] or [" "], 2900)
    pages: list[Rendered] = []
    blocks: list[Block] = [header(title)] if title else []
    for chunk in chunks:
        block = section(chunk)
        if blocks and (len(blocks) >= L.MAX_BLOCKS or _size([*blocks, block]) > MAX_MESSAGE_JSON):
            pages.append(Rendered(blocks=blocks, text=L.fallback(title or text)))
            blocks = []
        blocks.append(block)
    pages.append(Rendered(blocks=blocks, text=L.fallback(title or text)))
    return pages
