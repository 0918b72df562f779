"""Block Kit of ``/gpu pending``: a compact list of the stuck GPU workloads, by cause, worst first.

One header, the summary line, then one section per cause: its code and title, and up to
``LINES_PER_CAUSE`` workloads as one line each (namespace/workload, pods, age, the fix in a few
words), the rest as "and M more like this". Causes beyond the message's room are counted, never
half-shown. What could not be read comes first (the answer is incomplete). Every piece of cluster
text passes ``limits.escape_mrkdwn``; sizes stay within ``bot.slack.limits``.
"""

from __future__ import annotations

import json

from bot.pending.render import more_line
from bot.report import Report
from bot.report.pending import PendingAnswer, PendingGroup, PendingLine
from bot.slack import limits as L
from bot.slack.block_kit import MAX_MESSAGE_JSON, Block, Rendered, context, header, section, severity_marker

#: workloads listed under one cause in the channel message
LINES_PER_CAUSE = 5
#: sections for causes; the rest are counted in one line (header, summary, notes and footer use the others)
MAX_CAUSES = 12
#: characters of the fix on one workload line
FIX_CHARS = 100


def _size(blocks: list[Block]) -> int:
    return len(json.dumps(blocks, ensure_ascii=False))


def _line(line: PendingLine) -> str:
    like = " (like it)" if not line.diagnosed else ""
    # each part is bounded (names by validation, the fix by ``short_fix``), cut before escaping
    # so an entity is never cut in half
    return (f"• `{L.escape_mrkdwn(line.namespace)}/{L.escape_mrkdwn(line.workload)}` · {line.pods} pod(s) · "
            f"{L.escape_mrkdwn(L.clip(line.age, 12))}{like} · {L.escape_mrkdwn(L.clip(line.fix, FIX_CHARS))}")


def cause_section(n: int, group: PendingGroup) -> Block:
    """One cause: its code and title, then its workloads, one line each."""
    head = (f"*{n}. {severity_marker(group.severity)} `{L.escape_mrkdwn(group.code)}`* "
            f"{L.escape_mrkdwn(L.clip(group.title, 300))} — {len(group.lines)} workload(s), {group.pods} pod(s)")
    lines = [head, *(_line(x) for x in group.lines[:LINES_PER_CAUSE])]
    if len(group.lines) > LINES_PER_CAUSE:
        lines.append(f"_{more_line(group.lines[LINES_PER_CAUSE:])}_")
    return section(L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT))


def _undiagnosed(answer: PendingAnswer) -> Block:
    why = L.escape_mrkdwn(L.clip(answer.undiagnosed_why, 200))
    lines = [f"*Not diagnosed* ({why}): ask `/gpu why-pending` about each"]
    lines += [_line(x) for x in answer.undiagnosed[:LINES_PER_CAUSE]]
    if len(answer.undiagnosed) > LINES_PER_CAUSE:
        lines.append(f"_and {len(answer.undiagnosed) - LINES_PER_CAUSE} more_")
    return section(L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT))


def _title(report: Report, answer: PendingAnswer) -> str:
    if not report.complete:
        return f"⚠️ pending GPU work in {answer.scope}: incomplete"
    if not answer.stuck_pods:
        return f"✅ pending GPU work in {answer.scope}: none"
    worst = answer.groups[0].severity if answer.groups else "warning"
    return f"{severity_marker(worst)} pending GPU work in {answer.scope}"


def render_pending(report: Report) -> Rendered:
    """The channel message of a ``pending`` report."""
    answer = report.pending
    assert answer is not None
    blocks: list[Block] = [header(_title(report, answer))]
    for f in report.findings:  # only read failures: said before the list they make incomplete
        steps = f"\n{L.escape_mrkdwn(L.clip(f.next_steps[0], 600))}" if f.next_steps else ""
        blocks.append(section(f"{severity_marker(f.severity)} *{L.escape_mrkdwn(f.code)}*: "
                              f"{L.escape_mrkdwn(L.clip(f.title, 600))}{steps}"))
    blocks.append(section(L.escape_mrkdwn(answer.summary())))
    foot = [f"cluster {L.escape_mrkdwn(report.cluster or '-')} · {report.elapsed_ms} ms · "
            "`/gpu why-pending KIND/NAME -n NAMESPACE` for one in full"]
    tail = [_undiagnosed(answer)] if answer.undiagnosed else []
    tail.append(context(foot))
    budget = MAX_MESSAGE_JSON - _size(tail) - 600  # room for the "more causes" line
    shown = 0
    for n, g in enumerate(answer.groups[:MAX_CAUSES], 1):
        part = cause_section(n, g)
        if _size([*blocks, part]) > budget:
            break
        blocks.append(part)
        shown = n
    if len(answer.groups) > shown:
        rest = answer.groups[shown:]
        blocks.append(section(f"_{len(rest)} more cause(s), {sum(g.pods for g in rest)} pod(s): "
                              "run `gpubot pending -o json` for all of them._"))
    blocks += tail
    return Rendered(blocks=blocks[: L.MAX_BLOCKS], text=L.fallback(answer.summary()))


def pending_summary_text(report: Report) -> str:
    """What the "diagnosing…" placeholder becomes: the summary line, escaped."""
    answer = report.pending
    assert answer is not None
    incomplete = "⚠️ incomplete: " if not report.complete else ""
    return f"{incomplete}{L.escape_mrkdwn(L.clip(answer.summary(), 2000))}"
