"""``gpubot pending`` as text: a summary line, then one table per cause, worst first.

Each cause shows at most ``LINES_PER_CAUSE`` workloads; the rest are one "and M more like this"
line, so 500 stuck pods of one cause read as one cause, not a wall of repeats. What could not be
read comes before anything else: it is why the answer is incomplete.
"""

from __future__ import annotations

import textwrap

from bot.report import Report, skip_lines
from bot.report.pending import PendingAnswer, PendingLine

#: workloads printed under one cause before "and M more like this"
LINES_PER_CAUSE = 8
MARK = {"critical": "[CRITICAL]", "warning": "[WARNING]", "info": "[info]"}
#: marks a workload counted like a diagnosed one, not diagnosed on its own
LIKE = "~"


def _table(lines: list[PendingLine]) -> list[str]:
    rows = [("NAMESPACE", "WORKLOAD", "PODS", "AGE", "CAUSE", "FIX")]
    rows += [(ln.namespace, ln.workload, str(ln.pods), ln.age, ln.code if ln.diagnosed else LIKE + ln.code, ln.fix)
             for ln in lines]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["   " + "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5] for r in rows]


def more_line(lines: list[PendingLine]) -> str:
    """``and M more like this (P pods)`` for the lines not shown."""
    return f"and {len(lines)} more like this ({sum(ln.pods for ln in lines)} pod(s))"


def answer_lines(answer: PendingAnswer, *, per_cause: int = LINES_PER_CAUSE) -> list[str]:
    out: list[str] = []
    for i, g in enumerate(answer.groups, 1):
        out.append(f"{i}. {MARK.get(g.severity, g.severity)} {g.code}: {g.title} "
                   f"({len(g.lines)} workload(s), {g.pods} pod(s))")
        out += _table(g.lines[:per_cause])
        if len(g.lines) > per_cause:
            out.append("   " + more_line(g.lines[per_cause:]))
        out.append("")
    if answer.undiagnosed:
        out.append(f"Not diagnosed ({answer.undiagnosed_why}): run why-pending on them one by one")
        out += _table(answer.undiagnosed[:per_cause])
        if len(answer.undiagnosed) > per_cause:
            out.append("   " + more_line(answer.undiagnosed[per_cause:]).replace(" like this", ""))
        out.append("")
    if any(not ln.diagnosed for g in answer.groups for ln in g.lines):
        out.append(f"{LIKE}CAUSE: same pod state, GPU request and scheduler message as a diagnosed workload; "
                   "not diagnosed on its own.")
    return out


def render_pending(report: Report, *, width: int = 100) -> str:
    answer = report.pending
    assert answer is not None
    scope = "-A" if not answer.namespace else f"-n {answer.namespace}"
    head = f"gpubot pending {scope}"
    lines = [head, "=" * len(head)]
    if report.cluster:
        lines.append(f"cluster: {report.cluster}   elapsed: {report.elapsed_ms} ms")
    lines.append("")
    for f in report.findings:  # only what could not be read: the answer is incomplete
        lines += textwrap.wrap(f"{MARK.get(f.severity, f.severity)} {f.code}: {f.title}", width,
                               subsequent_indent="  ")
        lines += [f"  next: {step}" for step in f.next_steps[:1]]
    if report.findings:
        lines += ["The answer is incomplete: what could not be read may hide stuck pods or their causes.", ""]
    lines += textwrap.wrap(answer.summary(), width)
    lines.append("")
    lines += answer_lines(answer)
    if report.skipped:
        lines.append("Skipped:")
        lines += [f"  - {line}" for line in skip_lines(report.skipped)]
    return "\n".join(lines).rstrip("\n") + "\n"
