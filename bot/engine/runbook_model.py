"""The in-memory form of the runbook files: finding templates, diagnosis and guidance runbooks.

These are plain values built by ``runbook_schema`` after validation; nothing here reads files
or the cluster. A template only becomes a ``Finding`` through ``render_template`` (plain
``{name}`` fields, nothing evaluated), so text from runbooks and facts from the cluster can never
run as code.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.engine.runbook_text import render_template, render_title
from bot.errors import UsageError
from bot.report import Finding, Remediation, Severity

SEVERITIES: tuple[str, ...] = ("critical", "warning", "info")


def applies(params: Mapping[str, object], when: str, when_not: str) -> bool:
    """``when`` (a finding parameter that must be truthy) and ``when_not`` (falsy) hold; unset
    ones hold always."""
    return not (when and not params.get(when)) and not (when_not and params.get(when_not))


@dataclass(frozen=True)
class StepTemplate:
    """A next step of a finding, shown only where ``when``/``when_not`` hold, as an offer is.

    Why: the first step is the fix a report leads with (``fix:`` beside the root cause), and some
    findings fail for different reasons in different cases: a node read over SSH wants the node's
    address and key checked, one through the agent wants the bot's exec right checked."""

    text: str
    when: str = ""
    when_not: str = ""


@dataclass(frozen=True)
class OfferTemplate:
    """A fix a finding offers, with its action parameters bound from the finding's parameters.

    ``params`` values are templates (``"{node}"``). ``when``/``when_not`` name a finding
    parameter that must be truthy/falsy for the offer to appear. ``each`` names a list parameter
    of mappings: one offer per item, the item's keys filling the templates before the finding's.
    """

    action: str
    summary: str
    params: dict[str, str] = field(default_factory=dict)
    when: str = ""
    when_not: str = ""
    each: str = ""

    def bind(self, params: Mapping[str, object]) -> list[Remediation]:
        """The concrete offers for one finding; an offer with an unbound parameter is dropped."""
        if not applies(params, self.when, self.when_not):
            return []
        scopes: list[Mapping[str, object]] = [params]
        if self.each:
            items = params.get(self.each)
            if not isinstance(items, list | tuple):
                return []
            scopes = [{**params, **item} for item in items if isinstance(item, Mapping)]
        out = []
        for scope in scopes:
            bound = {k: render_template(v, scope) for k, v in self.params.items()}
            if any(not v or "{" in v for v in bound.values()):
                continue  # a button that could never run is worse than none
            out.append(Remediation(self.action, bound, render_template(self.summary, scope)))
        return out


@dataclass(frozen=True)
class Role:
    """A case of a finding with its own weight (``roles:`` in the catalogue)."""

    severity: Severity
    rank: int


@dataclass
class FindingTemplate:
    """The catalogue entry of one finding code (``runbooks/findings.yaml``)."""

    code: str
    severity: Severity
    title: str
    explanation: str
    next_steps: list[StepTemplate] = field(default_factory=list)
    #: in fix order, least invasive first
    offers: list[OfferTemplate] = field(default_factory=list)
    #: 0-100; lower = more likely the root cause among findings of equal severity
    rank: int = 50
    #: role name (set by the check) -> severity and rank for that case
    roles: dict[str, Role] = field(default_factory=dict)
    #: codes (or ``PREFIX_*``) whose presence makes this finding redundant: it is dropped
    unless: tuple[str, ...] = ()
    #: codes this finding is a consequence of: when one of them is in the same report (on the same
    #: node, for two node findings), the views fold this finding under it as "explained by"
    consequence_of: tuple[str, ...] = ()
    #: name of a guidance runbook that explains the background (shown as a next step)
    docs: str = ""
    source: str = ""
    line: int = 0

    def suppressed_by(self, codes: set[str]) -> bool:
        for pattern in self.unless:
            if pattern.endswith("*"):
                if any(c.startswith(pattern[:-1]) and c != self.code for c in codes):
                    return True
            elif pattern in codes:
                return True
        return False

    def render(self, params: Mapping[str, object], *, evidence: Sequence[str] = (), role: str = "") -> Finding:
        """A ``Finding`` with every text and offer filled from ``params``."""
        weight = self.roles.get(role)
        remediations = [r for offer in self.offers for r in offer.bind(params)]
        steps = [render_template(s.text, params).strip() for s in self.next_steps
                 if applies(params, s.when, s.when_not)]
        if self.docs:
            steps.append(render_template(DOCS_STEP, {**params, "docs": self.docs}))
        return Finding(
            code=self.code,
            severity=weight.severity if weight else self.severity,
            title=render_title(self.title, params),
            evidence=[str(e) for e in evidence],
            explanation=render_template(self.explanation, params).strip(),
            next_steps=steps,
            remediations=remediations,
            rank=weight.rank if weight else self.rank,
            role=role,
        )


#: the next step that points at a finding's background guide
DOCS_STEP = "Background: {gpubot} runbook {docs}"


@dataclass(frozen=True)
class GuideTable:
    """A table in a guidance section; cells are display text."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class GuideSection:
    """One heading of a guidance runbook. ``examples`` are shown to a human, never executed."""

    heading: str
    text: str = ""
    examples: tuple[str, ...] = ()
    table: GuideTable | None = None


@dataclass
class Runbook:
    """A ``kind: diagnosis`` or ``kind: guidance`` file. Fields of the other kind stay empty."""

    kind: str
    name: str
    summary: str = ""
    source: str = ""
    line: int = 0
    # diagnosis
    command: str = ""
    #: check name -> index of the ``checks`` item (a name or ``family.*``) that selected it
    checks: dict[str, int] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: report sections besides findings (``node_table``)
    views: list[str] = field(default_factory=list)
    # guidance
    title: str = ""
    covers: list[str] = field(default_factory=list)
    sections: list[GuideSection] = field(default_factory=list)
    see_also: list[str] = field(default_factory=list)


@dataclass
class RunbookSet:
    """Every runbook of one directory, validated together."""

    catalogue: dict[str, FindingTemplate] = field(default_factory=dict)
    #: keyed by command
    diagnoses: dict[str, Runbook] = field(default_factory=dict)
    #: keyed by name (``guide-…``)
    guides: dict[str, Runbook] = field(default_factory=dict)
    #: placeholder names the catalogue declares (empty = not declared)
    placeholders: frozenset[str] = frozenset()
    directory: str = ""

    def guide(self, name: str) -> Runbook:
        """The guide a user asked for; ``UsageError`` with close names when there is none.

        Guide names are typed by people, so an unknown one is a usage error, not a bug.
        """
        if name in self.guides:
            return self.guides[name]
        close = difflib.get_close_matches(name, list(self.guides), n=3, cutoff=0.5)
        hint = f" did you mean {', '.join(close)}?" if close else " list them with: runbook"
        raise UsageError(f"no runbook named {ascii(name[:60])}.{hint}")

    def diagnosis(self, command: str) -> Runbook:
        """The runbook of a command; ``KeyError`` (a packaging bug) when none is loaded."""
        return self.diagnoses[command]

    def template(self, code: str) -> FindingTemplate:
        """The catalogue entry of a code; ``KeyError`` when a check emits an unknown code."""
        return self.catalogue[code]
