"""How an Alertmanager group looks in Slack: one message, however many alerts it holds.

Up to ``SUMMARY_OVER`` alerts the message lists the first ``_SHOWN_ALERTS`` with their labels and
summary. A bigger group (an alert storm: 2,000 Xid alerts on 300 nodes) becomes a summary that a
paged person can read: counts by alert name and by node, then a link-free list of the first
``_SHOWN_IN_SUMMARY`` (name and node only: annotations carry runbook and generator URLs, which in
a storm would be hundreds of links). Every value from the payload passes through
``limits.escape_mrkdwn``, the notification ``text`` included, so a label can never ping or link.
Pure functions: a group in, a message out.
"""

from __future__ import annotations

from collections import Counter

from bot.proactive.alerts import Alert, AlertGroup
from bot.report import Report
from bot.slack import limits as L
from bot.slack.blocks import Block, Rendered, context, header, section, severity_marker

#: alerts listed one by one in a normal group's message
_SHOWN_ALERTS = 15
#: beyond this many alerts a group is summarised (counts by name and node)
SUMMARY_OVER = 200
#: rows of each count table, and alerts listed, in a summary
_TOP = 10
_SHOWN_IN_SUMMARY = 20
#: alert names named in the title before "+N more"
_TITLE_NAMES = 3


def _firing_marker(alert: Alert) -> str:
    return "🔥" if alert.status == "firing" else "✅"


def title_of(group: AlertGroup) -> str:
    """``🔥 DCGMXidError, NodeNotReady: 3 firing of 5`` (raw: escape it for mrkdwn)."""
    names = sorted({a.name for a in group.alerts})
    more = len(names) - _TITLE_NAMES
    shown = ", ".join(names[:_TITLE_NAMES]) + (f" +{more} more" if more > 0 else "")
    marker = "✅" if group.status == "resolved" else "🔥"
    state = "resolved" if group.status == "resolved" else f"{len(group.firing())} firing"
    return f"{marker} {shown}: {state} of {len(group.alerts)}"


def _listed(group: AlertGroup) -> str:
    lines = []
    for alert in group.alerts[:_SHOWN_ALERTS]:
        where = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()) if k != "alertname")
        lines.append(L.escape_mrkdwn(f"• {_firing_marker(alert)} {alert.name} {where} {alert.summary}".rstrip()))
    if len(group.alerts) > _SHOWN_ALERTS:
        lines.append(f"… and {len(group.alerts) - _SHOWN_ALERTS} more")
    return L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT)


def _counts(what: str, counts: Counter[str], firing: Counter[str], rest: str) -> str:
    lines = [f"*By {what}* ({len(counts)}):"]
    for key, n in counts.most_common(_TOP):
        lines.append(f"• {L.escape_mrkdwn(L.clip(key, 120))}: {n} ({firing[key]} firing)")
    if len(counts) > _TOP:
        lines.append(f"… and {len(counts) - _TOP} more {rest}")
    return L.clip_lines("\n".join(lines), L.MAX_SECTION_TEXT)


def _summary_blocks(group: AlertGroup) -> list[Block]:
    names: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    names_firing: Counter[str] = Counter()
    nodes_firing: Counter[str] = Counter()
    for alert in group.alerts:
        node = group.node_of(alert) or "(no node label)"
        names[alert.name] += 1
        nodes[node] += 1
        if alert.status == "firing":
            names_firing[alert.name] += 1
            nodes_firing[node] += 1
    first = [
        L.escape_mrkdwn(f"• {_firing_marker(a)} {L.clip(a.name, 80)} on {L.clip(group.node_of(a) or '-', 80)}")
        for a in group.alerts[:_SHOWN_IN_SUMMARY]
    ]
    listed = f"*First {len(first)} of {len(group.alerts)}* (names and nodes only):\n" + "\n".join(first)
    return [
        section(f"Alert storm: {len(group.alerts)} alerts in one group, summarised."),
        section(_counts("alert name", names, names_firing, "alert names")),
        section(_counts("node", nodes, nodes_firing, "nodes")),
        section(L.clip_lines(listed, L.MAX_SECTION_TEXT)),
    ]


def render_group(group: AlertGroup, diagnosis: Report | None) -> Rendered:
    """One message per alert group: what fires, what resolved, and the diagnosis of its target."""
    title = title_of(group)
    blocks = [header(title)]
    if len(group.alerts) > SUMMARY_OVER:
        blocks += _summary_blocks(group)
    else:
        blocks.append(section(_listed(group)))
    if group.truncated:
        blocks.append(context([f"Alertmanager left {group.truncated} more alert(s) out of this group (max_alerts)"]))
    if diagnosis is not None:
        found = [f for f in diagnosis.findings if f.severity != "info"][:5]
        diag = [f"{severity_marker(f.severity)} {L.escape_mrkdwn(f.title)} `{f.code}`" for f in found]
        body = "\n".join(diag) or "no problem found"
        blocks.append(section(L.clip_lines(f"*gpubot {diagnosis.command}:*\n{body}", L.MAX_SECTION_TEXT)))
    blocks.append(context([f"Alertmanager group {L.escape_mrkdwn(L.clip(group.group_key, 200))}"]))
    return Rendered(blocks=blocks, text=L.fallback(title))
