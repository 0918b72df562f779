"""Unread nodes: every one by name and reason in JSON; grouped by reason, with counts, in text and Slack.

A report where 100 of 300 nodes could not be read used to name 52 of them ("… and 48 more", in
JSON too). The JSON ``skipped`` list now has one entry per node with its reason, and the views
a person reads show one line per reason: how many nodes, and the first few names.
"""

from __future__ import annotations

import json

from bot.console.render_text import render_text
from bot.report import DEADLINE_SKIP, NODE_READ_SKIP, SHOWN_UNREAD_NODES, Report, skip_lines
from bot.slack.blocks import render_report
from bot.slack.plaintext import full_text

LATE = [f"gpu-{i:03d}" for i in range(0, 204, 3)]  # 68 nodes whose turn never came
HUNG = [f"gpu-{i:03d}" for i in range(1, 96, 3)]  # 32 nodes that reached their own deadline


def _report() -> Report:
    report = Report(command="node-status", target={}, cluster="c1")
    report.skip("pods", "API timeout")
    for node in sorted(LATE + HUNG):
        report.skip(f"{NODE_READ_SKIP} {node}", DEADLINE_SKIP if node in LATE else "ssh timeout")
    report.skip(f"{NODE_READ_SKIP} gpu-999", "ssh auth")
    return report


def test_json_names_every_unread_node_with_its_reason() -> None:
    skipped = json.loads(json.dumps(_report().to_dict()))["skipped"]
    by_node = {s["what"].removeprefix(f"{NODE_READ_SKIP} "): s["why"] for s in skipped if s["what"] != "pods"}
    assert len(by_node) == len(LATE) + len(HUNG) + 1
    assert {by_node[n] for n in LATE} == {DEADLINE_SKIP}
    assert {by_node[n] for n in HUNG} == {"ssh timeout"}


def test_views_group_unread_nodes_by_reason_with_counts() -> None:
    lines = skip_lines(_report().skipped)
    assert lines[0] == "pods: API timeout"
    late = next(line for line in lines if DEADLINE_SKIP in line)
    assert late.startswith(f"{NODE_READ_SKIP} {len(LATE)} nodes ({', '.join(LATE[:SHOWN_UNREAD_NODES])} and ")
    assert late.endswith(f" and {len(LATE) - SHOWN_UNREAD_NODES} more): {DEADLINE_SKIP}")
    assert f"{NODE_READ_SKIP} {len(HUNG)} nodes (gpu-001, " in "\n".join(lines)
    assert f"{NODE_READ_SKIP} gpu-999: ssh auth" in lines  # one node: as it was
    assert len(lines) == 4
    text = render_text(_report())
    assert text.count(NODE_READ_SKIP) == 3 and f"more): {DEADLINE_SKIP}" in text
    assert f"{len(HUNG)} nodes (gpu-001, " in full_text(_report())
    footer = json.dumps(render_report(_report()).blocks[-1])
    assert f"{len(LATE)} nodes (gpu-000, " in footer and f"more) ({DEADLINE_SKIP})" in footer
    assert "ssh timeout" in footer and "gpu-999 (ssh auth)" in footer
