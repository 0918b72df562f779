"""From a node-status report to problems with a stable fingerprint.

A fingerprint names one open problem: (cluster, code, subject). The subject is the node a finding
is about (the ``node`` its offered fixes name, else the one node named in its title); a finding
about no single node (a device plugin down on several nodes) keys on its title with the numbers
masked, so "down on 3 nodes" and "down on 4 nodes" stay one problem. What may change while the
problem stays open (counts, evidence) is the problem's ``digest``: a change edits the post in
place and says what changed in its thread, a new fingerprint is a new post.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from bot.report import Finding, Report
from bot.state.records import Problem

__all__ = ["Problem", "fingerprint", "problems_from_report", "subject_of"]

_NUMBER = re.compile(r"\d+")


def fingerprint(cluster: str, code: str, subject: str) -> str:
    return hashlib.sha256(f"{cluster}\x00{code}\x00{subject}".encode()).hexdigest()[:20]


def subject_of(finding: Finding, node_names: Iterable[str]) -> str:
    """The node a finding is about, or its masked title when it is about no single node."""
    for rem in finding.remediations:
        node = rem.params.get("node")
        if node:
            return f"node/{node}"
    named = [n for n in node_names if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])", finding.title)]
    if len(named) == 1:
        return f"node/{named[0]}"
    return "title/" + _NUMBER.sub("#", finding.title)


def problems_from_report(report: Report, *, cluster: str, codes: Iterable[str]) -> list[Problem]:
    """The report's findings with a watched code, one problem per fingerprint (first one wins)."""
    wanted = set(codes)
    nodes = [row.node for row in report.nodes]
    out: dict[str, Problem] = {}
    for finding in report.findings:
        if finding.code not in wanted:
            continue
        subject = subject_of(finding, nodes)
        fp = fingerprint(cluster, finding.code, subject)
        if fp not in out:
            out[fp] = Problem(
                fingerprint=fp,
                cluster=cluster,
                code=finding.code,
                severity=finding.severity,
                subject=subject,
                title=finding.title,
                evidence=tuple(finding.evidence),
            )
    return list(out.values())
