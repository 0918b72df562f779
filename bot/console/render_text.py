"""Render a Report as readable terminal text (the CLI's default output).

Read by cause like the Slack view (``bot.views.groups``): the verdict line first, then one entry
per finding code naming every object it was found on, each distinct fix offered once, least
invasive first, an action offered on many objects worded once with its other targets on one line.
"""

from __future__ import annotations

import textwrap
from functools import partial

from bot.console.terminal import Terminal
from bot.report import Report, skip_lines
from bot.views.card_state import label as card_label
from bot.views.card_state import node_card_states
from bot.views.groups import WHERE_NAMES_SHOWN, FindingGroup, Fix, group_findings, verdict

#: commands in the text must stay copy-pasteable: never split inside a word or at a hyphen
_wrap = partial(textwrap.wrap, break_on_hyphens=False, break_long_words=False)

#: targets named on an action's "the same for" line; the JSON output and ``-o wide`` list every
#: one (a cause's heading names ``WHERE_NAMES_SHOWN`` objects, as the verdict and Slack do)
MAX_TARGETS_LISTED = 20
#: members' titles listed under a cause found on many objects; ``-o wide`` lists every one
TITLES_SHOWN = 8
#: evidence lines under one cause (whole members, at least the first one's); ``-o wide`` shows all:
#: a card-by-card note on a 40-node fleet was 400 lines between the causes and the prompt
EVIDENCE_LINES_SHOWN = 16

MARK = {"critical": "[CRITICAL]", "warning": "[WARNING] ", "info": "[info]    "}
#: the colour of each severity's mark on a terminal
MARK_STYLE = {"critical": ("red", "bold"), "warning": ("yellow", "bold"), "info": ("blue",)}
#: no terminal: plain text
PLAIN = Terminal()


def _target_text(report: Report) -> str:
    t = report.target
    if "name" in t:
        kind = str(t.get("kind", "Pod"))
        prefix = "" if kind == "Pod" else f"{kind.lower()}/"
        return f"{prefix}{t.get('name')} in {t.get('namespace')}"
    if t.get("nodes"):
        return "nodes " + ", ".join(map(str, t["nodes"]))
    if report.command == "pending":
        where = str(t.get("namespace") or "default")
        return "in every namespace" if where == "*" else f"in {where}"
    return "all GPU nodes" if report.command == "node-status" else ""


def render_node_table(report: Report) -> list[str]:
    lines = []
    for row in report.nodes:
        state = ("Ready" if row.ready else "NotReady") + (",Cordoned" if row.cordoned else "")
        lines.append(f"node {row.node}  [{state}]  node read: {row.ssh}")
        known = [f"{k} {v}" for k, v in (("kubelet", row.kubelet), ("driver", row.driver), ("cuda", row.cuda),
                                          ("driver_path", row.driver_path)) if v]
        if known:
            lines.append("    " + "  ".join(known))
        if row.taints:
            lines.append("    taints: " + ", ".join(row.taints))
        lines += [f"    component {c}" for c in row.components]
        for res, v in sorted(row.logical.items()):
            lines.append(
                f"    {res:<36} capacity {v.get('capacity', 0):>6g}  allocatable {v.get('allocatable', 0):>6g}"
                f"  requested {v.get('requested', 0):>6g}"
            )
        states = node_card_states(row)
        if states and not row.gpus:  # not read: the cards the API counts, with the picture's state
            lines.append(f"    {len(states)} card(s): {card_label(states[0])} (count from the API's capacity)")
        for g, state in zip(row.gpus, states, strict=False):
            lines.append(
                f"    GPU{g.index}  util {_n(g.utilization)}%  mem {_n(g.memory_used_mib)}/"
                f"{_n(g.memory_total_mib)} MiB  {_n(g.temperature_c)}C  {_n(g.power_w)}W"
                f"  procs {g.processes}  -> {g.verdict}: {card_label(state)}"
                + (f"  [{', '.join(g.pods)}]" if g.pods else "")
            )
        lines += [f"    pod {p}" for p in row.pods]
    return lines


def render_story(report: Report, width: int) -> list[str]:
    """The pod's own story under the verdict: a few lines, each wrapped, then a blank line."""
    if report.story is None:
        return []
    lines = ["What the API says about it:"]
    for line in report.story.lines():
        lines += _wrap(line, width, initial_indent="  ", subsequent_indent="      ")
    return [*lines, ""]


def _n(value: object) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _offer_lines(group: FindingGroup, width: int) -> list[str]:
    """Each action once, worded by its first target, then the other targets on one line: the
    same fix on thirty nodes is two lines, not thirty (Slack shows a node picker instead). The
    first line is the verdict's fix; each says how to run it here (``gpubot act``)."""
    lines = []
    for same in group.actions():
        first = same[0]
        lines += _wrap(f"=> {first.label()}: {first.remediation.summary}".rstrip(": "), width,
                       initial_indent="     ", subsequent_indent="          ")
        others = [f.target for f in same[1:]]
        if others:
            shown = others[:MAX_TARGETS_LISTED]
            more = f" and {len(others) - len(shown)} more" if len(others) > len(shown) else ""
            lines += _wrap(f"the same for {', '.join(shown)}{more}", width, initial_indent="        ",
                           subsequent_indent="        ")
        lines.append(f"        run: gpubot act {first.action}{_act_flags(first)}")
    return lines


def _act_flags(fix: Fix) -> str:
    """``--node NODE`` for ``gpubot act``: the first target's parameters as its options."""
    return "".join(f" --{k.replace('_', '-')} {v}" for k, v in sorted(fix.remediation.params.items()))


def _head(n: str, group: FindingGroup, indent: str, term: Terminal, width: int, full: bool) -> list[str]:
    """``1. [CRITICAL] CODE: title`` (or ``on`` where, then each title), wrapped at ``width``; the
    mark is coloured after wrapping so escape codes never count as columns."""
    mark = MARK.get(group.severity, group.severity)
    sub = f"{indent}       "
    if len(group.findings) == 1:
        lines = _wrap(f"{indent}{n}. {mark} {group.code}: {group.lead.title}", width, subsequent_indent=sub)
    else:
        where = group.where(None if full else WHERE_NAMES_SHOWN) or f"{len(group.findings)} objects"
        lines = _wrap(f"{indent}{n}. {mark} {group.code} on {where}", width, subsequent_indent=sub)
        titles = group.titles
        shown = titles if full else titles[:TITLES_SHOWN]
        if len(shown) < len(titles):
            shown = [*shown, f"… and {len(titles) - len(shown)} more (-o wide lists every one)"]
        for title in shown:
            lines += _wrap(title, width, initial_indent=f"{indent}     * ", subsequent_indent=sub)
    painted = term.paint(mark, *MARK_STYLE.get(group.severity, ()))
    return [lines[0].replace(mark, painted, 1), *lines[1:]]


def _evidence(group: FindingGroup, indent: str, full: bool) -> list[str]:
    """The members' evidence; past ``EVIDENCE_LINES_SHOWN`` lines, the first members' whole and a
    count of the rest (a member's lines are never cut in the middle, except the first's)."""
    members = [[part for ev in f.evidence for part in (str(ev).splitlines() or [""])] for f in group.findings]
    shown: list[str] = []
    for taken, member in enumerate(members):
        if not full and shown and len(shown) + len(member) > EVIDENCE_LINES_SHOWN:
            hidden = sum(len(m) for m in members[taken:])
            rest = len([m for m in members[taken:] if m])
            shown.append(f"… {hidden} more line(s) about {rest} more {_kind_of(group)}: -o wide shows every one")
            break
        shown += member if full else member[:EVIDENCE_LINES_SHOWN]
    return [f"{indent}       | {line}" for line in shown]


def _kind_of(group: FindingGroup) -> str:
    """What the members are, for a count: ``node(s)`` when every one is a node."""
    kinds = {subject.partition("/")[0] for subject in group.subjects}
    return f"{kinds.pop()}(s)" if len(kinds) == 1 and "" not in kinds else "object(s)"


def _group_lines(i: int, group: FindingGroup, width: int, term: Terminal, full: bool) -> list[str]:
    lines = _head(str(i), group, "", term, width, full) + _evidence(group, "", full)
    if group.explanation:
        lines += _wrap(group.explanation, width, initial_indent="     ", subsequent_indent="     ")
    if group.fixes:
        lines.append("     Fix, least invasive first:")
        lines += _offer_lines(group, width)
    steps = group.next_steps
    if steps:
        lines.append("     Next steps:")
    for step in steps:
        head, *rest = step.rstrip().split("\n")
        lines += _wrap(head, width, initial_indent="     - ", subsequent_indent="       ")
        lines += [f"         {part}" for part in rest]  # a YAML snippet keeps its shape
    for j, consequence in enumerate(group.consequences):
        lines += _head(f"{i}{chr(ord('a') + j % 26)}", consequence, "   ", term, width, full)
        lines.append(f"          explained by {group.code} (fix that first); the evidence:")
        lines += _evidence(consequence, "   ", full)
    return lines


def render_text(report: Report, *, width: int = 100, term: Terminal = PLAIN, full: bool = False) -> str:
    """The report as terminal text, wrapped at ``width``; ``term`` colours the severities and the
    verdict when it is a colour terminal (the words are the same either way). The verdict comes
    first, before any node table, so that a pager or a pipe into ``head`` opens on the root cause.
    Without ``full`` a cause found on many objects names the first of them and counts the rest
    (titles, evidence, the heading's objects): ``full`` (``-o wide``) lists every one."""
    if report.text:
        return report.text
    if report.pending is not None:
        from bot.pending.render import render_pending

        return render_pending(report, width=width)
    head = f"gpubot {report.command} {_target_text(report)}".rstrip()
    lines = [head, "=" * min(len(head), width)]
    if report.cluster:
        read_as = f"   read as: {report.read_as}" if report.read_as else ""
        lines.append(f"cluster: {report.cluster}   elapsed: {report.elapsed_ms} ms{read_as}")
    lines.append("")
    found = verdict(report)
    said = ["No problem found."] if found is None else [
        *(term.paint(line, "bold") for line in _wrap(found.text(), width, subsequent_indent="  ")),
        *([f"Found: {found.counts}."] if found.counts else []),
        "",
    ]
    lines += said
    if report.nodes:
        lines += render_node_table(report)
        lines.append("")
    if report.story is not None:
        lines += render_story(report, width)
    for i, group in enumerate(group_findings(report.findings), 1):
        lines += _group_lines(i, group, width, term, full)
        lines.append("")
    if report.skipped:
        lines.append("Skipped:")
        lines += [f"  - {line}" for line in skip_lines(report.skipped)]
    return "\n".join(lines).rstrip() + "\n"
