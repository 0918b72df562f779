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
from bot.registry import ACTION_LABELS, action_label, action_target
from bot.report import Finding, NodeRow, Remediation, Report

#: objects of one kind (and targets of one fix) a verdict names before it counts the rest
WHERE_NAMES_SHOWN = 20
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

    @property
    def target(self) -> str:
        """What it acts on, as a person names it (``tcs-1``, ``ns/pod``); empty for the cluster."""
        return action_target(self.remediation.params)

    def label(self) -> str:
        """``Restart kubelet · tcs-1``: the action in the catalogue's words and its target."""
        return action_label(self.action, self.remediation.params)


@dataclass
class FindingGroup:
    """Every finding of one code: one cause, found on one or more objects."""

    code: str
    findings: list[Finding]
    #: the distinct fixes this group offers first (a fix an earlier group offered is not repeated);
    #: a cause's list also holds the fixes its consequences offer, after its own
    fixes: list[Fix] = field(default_factory=list)
    #: groups of findings this cause explains (``Finding.explained_by``), folded under it
    consequences: list[FindingGroup] = field(default_factory=list)

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
        """The lead's explanation: the cause reads the same on every object. Where the members'
        explanations differ (each names its own pods and counts), it says whose it is: the lead's
        two zombie UIDs are not the whole group's."""
        lead = self.lead.explanation
        if not lead or all(f.explanation == lead for f in self.findings):
            return lead
        name = _object_name(self.lead.subject)
        others = len(self.subjects) - 1
        if not name or others < 1:
            return lead
        return f"On {name} (and alike on {others} more): {lead}"

    @property
    def explained_by(self) -> str:
        return self.lead.explained_by

    @property
    def next_steps(self) -> list[str]:
        """The members' next steps interleaved by position, repeats dropped; steps that differ
        only by the member's own object are one step naming them all ("restart kubelet on a, b"),
        not a line per node."""
        longest = max((len(f.next_steps) for f in self.findings), default=0)
        out: list[str] = []
        for i in range(longest):
            out += _one_per_shape([(_object_name(f.subject), f.next_steps[i])
                                   for f in self.findings if i < len(f.next_steps)])
        return _unique(out)

    def where(self, limit: int | None = None) -> str:
        """Where it was found (``nodes a, b``); past ``limit`` names a kind says how many more."""
        return where_text(self.subjects, limit)

    def first_fix(self) -> str:
        """The first thing to do about this cause, as the verdict and the group's own fix list
        both say it: each member's first action (on every target it offers it for), merged by
        action ("Restart qgpu-manager on a, b; Restart kubelet on c"), else the first next step
        that is not background reading. A zombie checkpoint on qGPU and on NVIDIA nodes is not
        fixed by the qGPU members' fix alone: the verdict names what comes first on every node."""
        if self.fixes:
            firsts = {fix_key(r.action, r.params) for f in self.findings if f.remediations
                      for r in f.remediations if r.action == f.remediations[0].action}
            leading = [[fix for fix in same if fix.key in firsts] for same in self.actions()]
            return "; ".join(fix_text(same) for same in leading if same) or fix_text(self.fixes)
        return step_head(self.next_steps[0]) if self.next_steps and not _background(self.next_steps[0]) else ""

    def actions(self) -> list[list[Fix]]:
        """The fixes by action, in fix order: ``[[restart-manager a, b], [kubelet.restart a, b]]``."""
        by_action: dict[str, list[Fix]] = {}
        for fix in self.fixes:
            by_action.setdefault(fix.action, []).append(fix)
        return list(by_action.values())


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
    def problem(self) -> bool:
        """The top finding is something wrong (critical: the cause; warning: will bite), not a
        note (info: context, such as a pod that runs or cards really in use)."""
        return self.severity in ("critical", "warning")

    @property
    def cause_label(self) -> str:
        """What the cause is called: with failed reads it is only what the rest showed; where only
        notes were found there is no cause, and calling a running pod a root cause misleads."""
        if self.incomplete:
            return "Found in what could be read"
        return "Root cause" if self.problem else "No problem found"

    @property
    def fix_label(self) -> str:
        """A note's first step is a thing to look at next, not a fix."""
        return "fix" if self.problem else "next"

    #: "1 cause, 2 consequences": how many causes the report holds and what they explain
    counts: str = ""

    def text(self) -> str:
        parts = []
        if self.cause:
            parts.append(f"{self.cause_label}: {self.cause}")
            if self.where:
                parts.append(f"where: {self.where}")
            if self.fix:
                parts.append(f"{self.fix_label}: {self.fix}")
        line = " — ".join(parts)
        if self.incomplete:
            return f"Incomplete: {self.incomplete}" + (f" {line}" if line else " Nothing was concluded from it.")
        return line


def group_findings(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Findings grouped by code, groups in the order of their first finding (root cause first);
    a consequence (``explained_by``) is folded under its cause's group; each distinct fix belongs
    to the first group offering it, in fix order, a consequence's fixes to its cause."""
    groups: dict[str, FindingGroup] = {}
    folded: dict[str, FindingGroup] = {}
    for finding in findings:
        into = folded if finding.explained_by else groups
        into.setdefault(finding.code, FindingGroup(finding.code, [])).findings.append(finding)
    for code, group in folded.items():
        cause = groups.get(group.explained_by)
        if cause is None:  # its cause was filtered out of this view: it stands on its own
            groups[code] = group
        else:
            cause.consequences.append(group)
    seen: set[FixKey] = set()
    for group in groups.values():
        members = [group, *group.consequences]
        for fix in [f for m in members for f in _fix_order(m.findings)]:
            if fix.key not in seen:
                seen.add(fix.key)
                group.fixes.append(fix)
    return list(groups.values())


def distinct_fixes(findings: Sequence[Finding]) -> list[Fix]:
    """Every distinct fix of a report, in the order the groups show them."""
    return [fix for group in group_findings(findings) for fix in group.fixes]


def counts_text(groups: Sequence[FindingGroup]) -> str:
    """``1 cause, 2 consequences``: critical causes, warnings, what they explain, and notes."""
    causes = sum(1 for g in groups if g.severity == "critical")
    warnings = sum(1 for g in groups if g.severity == "warning")
    notes = sum(1 for g in groups if g.severity not in ("critical", "warning"))
    consequences = sum(len(g.consequences) for g in groups)
    parts = [
        _plural(causes, "cause"),
        _plural(warnings, "warning"),
        _plural(consequences, "consequence"),
        _plural(notes, "note"),
    ]
    return ", ".join(p for p in parts if p)


def _plural(n: int, word: str) -> str:
    return "" if n == 0 else f"{n} {word}{'' if n == 1 else 's'}"


def _fix_order(findings: Sequence[Finding]) -> list[Fix]:
    """The catalogue lists a finding's offers least invasive first: take the first offer of every
    member, then the second of every member, and so on (restart-manager on both nodes before
    kubelet.restart on either)."""
    longest = max((len(f.remediations) for f in findings), default=0)
    return [Fix(f.remediations[i], f) for i in range(longest) for f in findings if i < len(f.remediations)]


def verdict(report: Report) -> Verdict | None:
    """The root cause (the first group), where it was found and the first fix (the same words
    the group's fix list starts with); ``None`` when nothing was found. Reads that failed come
    first (``incomplete``), and the cause is then the first finding that rests on what could be
    read."""
    incomplete = incomplete_line(report.unreadable)
    groups = [g for g in group_findings(report.findings) if not incomplete or g.code not in READ_CODES]
    if not groups:
        return Verdict("critical", "", "", "", incomplete) if incomplete else None
    top = groups[0]
    cause = top.lead.title
    if len(top.findings) > 1:
        cause += f" (and the same on {len(top.findings) - 1} more)"
    return Verdict(top.severity, cause, top.where(WHERE_NAMES_SHOWN), top.first_fix(), incomplete, counts_text(groups))


def fix_text(fixes: Sequence[Fix]) -> str:
    """The first action of ``fixes`` on every target it is offered for, in words:
    ``Restart qgpu-manager on a, b`` (past ``WHERE_NAMES_SHOWN`` targets, ``and N more``); one
    target alone reads as its offer's summary."""
    action = fixes[0].action
    same = [f for f in fixes if f.action == action]
    if len(same) == 1:
        return same[0].remediation.summary or same[0].label()
    targets = [f.target for f in same if f.target]
    words = ACTION_LABELS.get(action, action)
    shown = targets[:WHERE_NAMES_SHOWN]
    more = f" and {len(targets) - len(shown)} more" if len(targets) > len(shown) else ""
    return f"{words} on {', '.join(shown)}{more}" if targets else words


def step_head(step: str) -> str:
    """A next step's first line as a sentence: a step that introduces a snippet (``Add this
    toleration …:`` then YAML) says where the snippet is instead of ending on a colon, and one that
    opens with ``Fix:`` loses it (the verdict line says ``fix:`` itself: not ``fix: Fix: …``)."""
    head, _, rest = step.strip().partition("\n")
    head = head.rstrip()
    if head[:4].lower() == "fix:":
        head = head[4:].lstrip()
    if head.endswith(":"):
        head = head[:-1].rstrip() + (", as shown in the next steps" if rest.strip() else "")
    return head


def _background(step: str) -> bool:
    return step.startswith("Background:")


def where_text(subjects: Sequence[str], limit: int | None = None) -> str:
    """``node/a``, ``node/b`` → ``nodes a, b``; ``pod/ns/p`` → ``pod ns/p``; mixed kinds joined.
    With ``limit``, a kind names that many and counts the rest (``nodes a, b and 448 more``): a
    cause on a whole fleet is not a paragraph of names on top of the report."""
    by_kind: dict[str, list[str]] = {}
    for subject in subjects:
        kind, _, name = subject.partition("/")
        if not name:
            kind, name = "", subject
        by_kind.setdefault(kind, []).append(name)
    parts = []
    for kind, names in by_kind.items():
        shown = names if limit is None else names[:limit]
        listed = ", ".join(shown) + (f" and {len(names) - len(shown)} more" if len(names) > len(shown) else "")
        parts.append(listed if not kind else f"{kind}{'s' if len(names) > 1 else ''} {listed}")
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


#: how many objects a merged next step names before "and N more" (the group's head names them all)
STEP_NAMES_SHOWN = 8
_HOLE = "\x00"


def _object_name(subject: str) -> str:
    """``node/a`` -> ``a``; ``pod/ns/p`` -> ``ns/p``; "" when there is no subject."""
    return subject.partition("/")[2] if "/" in subject else subject


def _holed(step: str, name: str) -> str:
    """``step`` with every whole-word ``name`` replaced by a hole: not a name inside a longer one
    (``gpu-1`` in ``gpu-10``), though a sentence may end right after it. (A group of 500 nodes
    asks this 1,500 times per rendering: a search, not a regular expression compiled per name.)"""
    out, start = [], 0
    at = step.find(name)
    while at >= 0:
        end = at + len(name)
        whole = not _in_name(step[at - 1 : at]) and step[at - 1 : at] != "." and not (
            _in_name(step[end : end + 1]) or (step[end : end + 1] == "." and _in_name(step[end + 1 : end + 2]))
        )
        if whole:
            out += [step[start:at], _HOLE]
            start = end
        at = step.find(name, end if whole else at + 1)
    return "".join(out) + step[start:]


def _in_name(ch: str) -> bool:
    """``ch`` (one character or none) continues a name: a letter, a digit, ``_`` or ``-``."""
    return bool(ch) and (ch.isalnum() or ch in "_-")


def _one_per_shape(steps: Sequence[tuple[str, str]]) -> list[str]:
    """(object name, step) of the members at one position -> the steps, those equal but for the
    member's own name written once with every name in its place."""
    names: dict[str, dict[str, None]] = {}  # shape -> the names in it, in order, once each
    for name, step in steps:
        shape = _holed(step, name) if name and name in step else step
        names.setdefault(shape, {})[name] = None
    out = []
    for shape, named in names.items():
        if _HOLE not in shape:
            out.append(shape)
            continue
        listed = [n for n in named if n]
        shown = ", ".join(listed[:STEP_NAMES_SHOWN])
        more = f" and {len(listed) - STEP_NAMES_SHOWN} more" if len(listed) > STEP_NAMES_SHOWN else ""
        out.append(shape.replace(_HOLE, shown + more))
    return out
