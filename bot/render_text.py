"""Render a Report as readable terminal text (the CLI's default output)."""

from __future__ import annotations

import textwrap
from functools import partial

from bot.report import Report

#: commands in the text must stay copy-pasteable: never split inside a word or at a hyphen
_wrap = partial(textwrap.wrap, break_on_hyphens=False, break_long_words=False)

MARK = {"critical": "[CRITICAL]", "warning": "[WARNING] ", "info": "[info]    "}


def _target_text(report: Report) -> str:
    t = report.target
    if "name" in t:
        kind = str(t.get("kind", "Pod"))
        prefix = "" if kind == "Pod" else f"{kind.lower()}/"
        return f"{prefix}{t.get('name')} in {t.get('namespace')}"
    if t.get("nodes"):
        return "nodes " + ", ".join(map(str, t["nodes"]))
    return "all GPU nodes" if report.command == "node-status" else ""


def render_node_table(report: Report) -> list[str]:
    lines = []
    for row in report.nodes:
        state = "Ready" if row.get("ready") else "NotReady"
        if row.get("cordoned"):
            state += ",Cordoned"
        lines.append(f"node {row.get('node')}  [{state}]  ssh: {row.get('ssh', '?')}")
        facts = [f"{k} {row[k]}" for k in ("kubelet", "driver", "cuda", "driver_path") if row.get(k)]
        if facts:
            lines.append("    " + "  ".join(facts))
        if row.get("taints"):
            lines.append("    taints: " + ", ".join(map(str, row["taints"])))
        for component in row.get("components") or []:
            lines.append(f"    component {component}")
        for res, v in sorted((row.get("logical") or {}).items()):
            lines.append(
                f"    {res:<36} capacity {v.get('capacity', 0):>6g}  allocatable {v.get('allocatable', 0):>6g}"
                f"  requested {v.get('requested', 0):>6g}"
            )
        for g in row.get("gpus") or []:
            lines.append(
                f"    GPU{g.get('index')}  util {_n(g.get('utilization'))}%  mem {_n(g.get('memory_used_mib'))}/"
                f"{_n(g.get('memory_total_mib'))} MiB  {_n(g.get('temperature_c'))}C  {_n(g.get('power_w'))}W"
                f"  procs {g.get('processes', 0)}  -> {g.get('verdict', '?')}"
                + (f"  [{', '.join(map(str, g['pods']))}]" if g.get("pods") else "")
            )
        for p in row.get("pods") or []:
            lines.append(f"    pod {p}")
    return lines


def _n(value: object) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render_text(report: Report, *, width: int = 100) -> str:
    if report.text:
        return report.text
    head = f"gpubot {report.command} {_target_text(report)}".rstrip()
    lines = [head, "=" * min(len(head), width)]
    if report.cluster:
        lines.append(f"cluster: {report.cluster}   elapsed: {report.elapsed_ms} ms")
    lines.append("")
    if report.nodes:
        lines += render_node_table(report)
        lines.append("")
    if not report.findings:
        lines.append("No problem found.")
    for i, f in enumerate(report.findings, 1):
        lines.append(f"{i}. {MARK.get(f.severity, f.severity)} {f.code}: {f.title}")
        for ev in f.evidence:
            for part in str(ev).splitlines() or [""]:
                lines.append(f"       | {part}")
        if f.explanation:
            lines += _wrap(f.explanation, width, initial_indent="     ", subsequent_indent="     ")
        for step in f.next_steps:
            head, *rest = step.rstrip().split("\n")
            lines += _wrap(head, width, initial_indent="     - ", subsequent_indent="       ")
            lines += [f"         {part}" for part in rest]  # a YAML snippet keeps its shape
        for r in f.remediations:
            params = " ".join(f"{k}={v}" for k, v in sorted(r.params.items()))
            lines.append(f"     => offer {r.action} {params}: {r.summary}".rstrip())
        lines.append("")
    if report.skipped:
        lines.append("Skipped:")
        lines += [f"  - {s.what}: {s.why}" for s in report.skipped]
    return "\n".join(lines).rstrip() + "\n"
