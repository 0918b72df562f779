"""A report read by cause: findings grouped by code across objects, distinct fixes, the verdict.

The engine reports one finding per object (a zombie checkpoint on each of two nodes is two
findings), which is right for JSON and alert routing and wrong for a person: the same cause, its
explanation and its fixes would be shown once per node. Views (Slack's Block Kit, the terminal
text) read a report through this module instead:

- ``group_findings``: one ``FindingGroup`` per code, in report order (root cause first), naming
  every object it was found on and carrying their evidence and next steps merged;
- ``Fix``: one per distinct ``(action, params)``, in the runbook's fix order (the order of the
  offers in the catalogue, least invasive first), each owned by the first group that offers it;
- ``verdict``: the one line that goes on top: the root cause, where, and the first fix.

Pure functions over ``bot.report`` types; the JSON contract is untouched (``findings`` stays a
flat list). Nothing here decides whether a fix may be offered or who may approve it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.engine.unreadable import CODES as READ_CODES
from bot.engine.unreadable import incomplete_line
from bot.report import Finding, NodeRow, Remediation, Report

#: a fix's identity: the action and its sorted parameters
FixKey = tuple[str, tuple[tuple[str, str], ...]]


def fix_key(action: str, params: Mapping[str, str]) -> FixKey:
    return action, tuple(sorted((str(k), str(v)) for k, v in params.items()))


@dataclass(frozen=True)
class Fix:
    """One distinct remediation, as the first finding that offers it words it."""

    remediation: Remediation
    #: the finding that offers it first (its code goes into the audit trail)
    finding: Finding

    @property
    def key(self) -> FixKey:
        return fix_key(self.remediation.action, self.remediation.params)

    @property
    def action(self) -> str:
        return self.remediation.action

    def label(self) -> str:
        """``kubelet.restart tcs-1``: the action and its parameter values (a button's text)."""
        values = " ".join(str(v) for _, v in sorted(self.remediation.params.items()))
        return f"{self.action} {values}".strip()


@dataclass
class FindingGroup:
    """Every finding of one code: one cause, found on one or more objects."""

    code: str
    findings: list[Finding]
    #: the distinct fixes this group offers first (a fix an earlier group offered is not repeated)
    fixes: list[Fix] = field(default_factory=list)

    @property
    def lead(self) -> Finding:
        return self.findings[0]

    @property
    def severity(self) -> str:
        return self.lead.severity

    @property
    def subjects(self) -> list[str]:
        """The objects it was found on (``node/a``, ``pod/ns/p``), in order, without repeats."""
        return _unique(f.subject for f in self.findings if f.subject)

    @property
    def titles(self) -> list[str]:
        return _unique(f.title for f in self.findings)

    @property
    def evidence(self) -> list[str]:
        """Every member's evidence, in member order (lines usually name their node already)."""
        return [line for f in self.findings for line in f.evidence]

    @property
    def explanation(self) -> str:
        """The lead's explanation: the cause reads the same on every object."""
        return self.lead.explanation

    @property
    def next_steps(self) -> list[str]:
        """The members' next steps interleaved by position, repeats dropped (a step that names
        a node appears once per node, next to its siblings)."""
        longest = max((len(f.next_steps) for f in self.findings), default=0)
        return _unique(f.next_steps[i] for i in range(longest) for f in self.findings if i < len(f.next_steps))

    def where(self) -> str:
        return where_text(self.subjects)


@dataclass(frozen=True)
class Verdict:
    """The line on top of a report: what is wrong, where, and what to do first."""

    severity: str
    cause: str
    where: str
    fix: str
    #: the reads that failed, said first (``Could not read pods from URL: connection refused.``);
    #: empty when the answer is complete
    incomplete: str = ""

    @property
    def cause_label(self) -> str:
        """What the cause is called: with failed reads it is only what the rest showed."""
        return "Found in what could be read" if self.incomplete else "Root cause"

    def text(self) -> str:
        parts = []
        if self.cause:
            parts.append(f"{self.cause_label}: {self.cause}")
            if self.where:
                parts.append(f"where: {self.where}")
            if self.fix:
                parts.append(f"fix: {self.fix}")
        line = " — ".join(parts)
        if self.incomplete:
            return f"Incomplete: {self.incomplete}" + (f" {line}" if line else " Nothing was concluded from it.")
        return line


def group_findings(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Findings grouped by code, groups in the order of their first finding (root cause first);
    each distinct fix belongs to the first group offering it, in fix order."""
    groups: dict[str, FindingGroup] = {}
    for finding in findings:
        groups.setdefault(finding.code, FindingGroup(finding.code, [])).findings.append(finding)
    seen: set[FixKey] = set()
    for group in groups.values():
        for fix in _fix_order(group.findings):
            if fix.key not in seen:
                seen.add(fix.key)
                group.fixes.append(fix)
    return list(groups.values())


def distinct_fixes(findings: Sequence[Finding]) -> list[Fix]:
    """Every distinct fix of a report, in the order the groups show them."""
    return [fix for group in group_findings(findings) for fix in group.fixes]


def _fix_order(findings: Sequence[Finding]) -> list[Fix]:
    """The catalogue lists a finding's offers least invasive first: take the first offer of every
    member, then the second of every member, and so on (restart-manager on both nodes before
    kubelet.restart on either)."""
    longest = max((len(f.remediations) for f in findings), default=0)
    return [Fix(f.remediations[i], f) for i in range(longest) for f in findings if i < len(f.remediations)]


def verdict(report: Report) -> Verdict | None:
    """The root cause (the first group), where it was found and the first fix; ``None`` when
    nothing was found. Reads that failed come first (``incomplete``), and the cause is then the
    first finding that rests on what could be read."""
    incomplete = incomplete_line(report.unreadable)
    groups = [g for g in group_findings(report.findings) if not incomplete or g.code not in READ_CODES]
    if not groups:
        return Verdict("critical", "", "", "", incomplete) if incomplete else None
    top = groups[0]
    cause = top.lead.title
    if len(top.findings) > 1:
        cause += f" (and the same on {len(top.findings) - 1} more)"
    return Verdict(top.severity, cause, top.where(), _first_fix(top), incomplete)


def _first_fix(group: FindingGroup) -> str:
    """The first fix, merged across objects (``kubelet.restart on a, b``), else the first step."""
    if group.fixes:
        action = group.fixes[0].action
        same = [f for f in group.fixes if f.action == action]
        if len(same) == 1:
            return same[0].remediation.summary or same[0].label()
        targets = [" ".join(v for _, v in sorted(f.remediation.params.items())) for f in same]
        return f"{action} on {', '.join(targets)}"
    steps = [s for s in group.next_steps if not s.startswith("Background:")]
    return steps[0].split("\n", 1)[0] if steps else ""


def where_text(subjects: Sequence[str]) -> str:
    """``node/a``, ``node/b`` → ``nodes a, b``; ``pod/ns/p`` → ``pod ns/p``; mixed kinds joined."""
    by_kind: dict[str, list[str]] = {}
    for subject in subjects:
        kind, _, name = subject.partition("/")
        if not name:
            kind, name = "", subject
        by_kind.setdefault(kind, []).append(name)
    parts = []
    for kind, names in by_kind.items():
        if not kind:
            parts.append(", ".join(names))
        else:
            parts.append(f"{kind}{'s' if len(names) > 1 else ''} {', '.join(names)}")
    return "; ".join(parts)


def node_problems(row: NodeRow, findings: Iterable[Finding] = ()) -> list[str]:
    """What is wrong with one node, in short words: its state, its reads, and the codes of the
    critical and warning findings about it (``node/NAME`` subjects). Empty when nothing is."""
    problems: list[str] = []
    if not row.ready:
        problems.append("NotReady")
    if row.cordoned:
        problems.append("cordoned")
    if row.ssh != "ok":
        problems.append(f"not read ({row.ssh})")
    elif row.kubelet and row.kubelet != "active":
        problems.append(f"kubelet {row.kubelet}")
    unknown = [str(g.index) for g in row.gpus if g.verdict == "unknown"]
    if unknown:
        problems.append(f"GPU{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} unreadable")
    subject = f"node/{row.node}"
    problems += _unique(f.code for f in findings if f.subject == subject and f.severity != "info")
    return problems


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
