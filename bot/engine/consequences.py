"""Which findings of a report are consequences of another one in the same report.

A zombie checkpoint entry holds cards; the same report then also finds those cards "allocated but
idle" (a leak) and the pod's "failed to allocate". Three critical findings, one cause: a person
must read the cause first and the other two as what it explains. The catalogue declares the
relation as data (``consequence_of`` in ``runbooks/findings.yaml``); this module applies it to
one report, setting ``Finding.explained_by`` to the code of the root cause, so JSON readers and
every view see the same folding.

Two findings about nodes are related only when they are about the same node (a zombie entry on
one node does not explain a leak on another); a finding about a pod or the cluster is explained
by a cause on any node of the same report, except one its check set ``ASIDE`` (true of the node,
but not why the pod waits: the check knows the pod's request and the node's room).

A cause that explains what was asked about (a finding about the pod, not a node) is the answer:
it goes before causes of the same severity that explain nothing of it, whatever their ranks. A
zombie checkpoint on a full node is worth reporting beside a pending pod, but it is not why the
scheduler refused it when a Terminating pod holds the cards the pod needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.engine.check import ASIDE
from bot.report import Finding

CausesOf = Callable[[str], Sequence[str]]


def _related(consequence: Finding, cause: Finding) -> bool:
    both_nodes = consequence.subject.startswith("node/") and cause.subject.startswith("node/")
    if both_nodes:
        return consequence.subject == cause.subject
    return cause.role != ASIDE


def _explainer(finding: Finding, findings: Sequence[Finding], causes_of: CausesOf) -> Finding | None:
    """The first finding of the report that the catalogue names as this one's cause, in the
    catalogue's order of causes."""
    for code in causes_of(finding.code):
        for other in findings:
            if other is not finding and other.code == code and _related(finding, other):
                return other
    return None


def link_consequences(findings: Sequence[Finding], causes_of: CausesOf) -> None:
    """Set ``explained_by`` on every finding a cause in ``findings`` explains, to the code of the
    root cause (a leak explained by a zombie entry hands the zombie on to what the leak explains)."""
    direct = {id(f): _explainer(f, findings, causes_of) for f in findings}
    for finding in findings:
        seen = {id(finding)}
        cause = direct[id(finding)]
        root = None
        while cause is not None and id(cause) not in seen:
            root = cause
            seen.add(id(cause))
            cause = direct[id(cause)]
        finding.explained_by = root.code if root is not None else ""


def answer_first(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` (sorted) with the causes of findings about the pod or the cluster moved ahead
    of the other findings of their severity; the order is otherwise kept."""
    answering = {f.explained_by for f in findings if f.explained_by and not f.subject.startswith("node/")}
    if not answering:
        return list(findings)
    return sorted(findings, key=lambda f: (f.sort_key()[0], f.code not in answering))
