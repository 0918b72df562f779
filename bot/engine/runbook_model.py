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


@dataclass(frozen=True)
class RemediationTemplate:
    """An action a finding may offer; the check decides whether to offer it and with what params."""

    action: str
    summary: str


@dataclass
class FindingTemplate:
    """The catalogue entry of one finding code (``runbooks/findings.yaml``)."""

    code: str
    severity: Severity
    title: str
    explanation: str
    next_steps: list[str] = field(default_factory=list)
    remediations: list[RemediationTemplate] = field(default_factory=list)
    #: 0-100; lower = more likely the root cause among findings of equal severity
    rank: int = 50
    #: name of a guidance runbook that explains the background
    docs: str = ""
    source: str = ""
    line: int = 0

    def render(
        self,
        params: Mapping[str, object],
        *,
        evidence: Sequence[str] = (),
        offer: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Finding:
        """A ``Finding`` with every text filled from ``params``.

        ``offer`` maps action name -> action params for the remediations the check wants to
        offer; actions the catalogue does not list for this code are ignored, so a check cannot
        offer something the runbook author did not sanction.
        """
        remediations = [
            Remediation(r.action, dict(offer[r.action]), render_template(r.summary, params))
            for r in self.remediations
            if offer is not None and r.action in offer
        ]
        return Finding(
            code=self.code,
            severity=self.severity,
            title=render_title(self.title, params),
            evidence=[str(e) for e in evidence],
            explanation=render_template(self.explanation, params).strip(),
            next_steps=[render_template(s, params).strip() for s in self.next_steps],
            remediations=remediations,
            rank=self.rank,
        )


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
    usage: str = ""
    probes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    emits: list[str] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    guidance: list[str] = field(default_factory=list)
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

    def finding(
        self,
        code: str,
        params: Mapping[str, object],
        *,
        evidence: Sequence[str] = (),
        offer: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Finding:
        """Shortcut for ``template(code).render(...)``."""
        return self.template(code).render(params, evidence=evidence, offer=offer)
