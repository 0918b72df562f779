"""The whole report as plain text, for the file attached when a Slack message had to be cut.

Nothing is clipped here: this is where the findings that did not fit in 50 blocks end up. It is a
pure function of the report and never talks to Slack itself.
"""

from __future__ import annotations

from bot.report import Report, skip_lines
from bot.slack.tables import node_table_lines


def describe_target(report: Report) -> str:
    """Human words for what the command looked at: ``pod ai/train-0``, ``nodes a, b``."""
    target = report.target or {}
    if target.get("name"):
        kind = str(target.get("kind") or "Pod").lower()
        return f"{kind} {target.get('namespace') or 'default'}/{target['name']}"
    if "nodes" in target:
        nodes = [str(n) for n in target.get("nodes") or []]
        return "nodes " + ", ".join(nodes) if nodes else "all nodes"
    if target.get("topic"):
        return f"runbook {target['topic']}"
    if report.command == "pending":
        where = target.get("namespace") or "default"
        return "pending GPU pods " + ("in every namespace" if where == "*" else f"in {where}")
    return report.command


def full_text(report: Report) -> str:
    lines = [
        f"gpubot {report.command}: {describe_target(report)}",
        f"cluster: {report.cluster or '-'}   elapsed: {report.elapsed_ms} ms",
        f"verdict: {report.verdict()}",
        "",
    ]
    for n, f in enumerate(report.findings, 1):
        lines.append(f"{n}. [{f.severity.upper()}] {f.code}: {f.title}")
        if f.explanation:
            lines.append(f"   {f.explanation}")
        if f.evidence:
            lines.append("   evidence:")
            lines.extend(f"     {e}" for e in f.evidence)
        if f.next_steps:
            lines.append("   next steps:")
            lines.extend(f"     - {s}" for s in f.next_steps)
        for r in f.remediations:
            params = " ".join(f"{k}={v}" for k, v in sorted(r.params.items()))
            lines.append(f"   remediation: {r.action} {params} ({r.summary})")
        lines.append("")
    if report.nodes:
        lines.extend(node_table_lines(report.nodes))
        lines.append("")
    if report.text:
        lines.extend([report.text, ""])
    if report.skipped:
        lines.append("skipped:")
        lines.extend(f"  {line}" for line in skip_lines(report.skipped))
    return "\n".join(lines).rstrip() + "\n"
