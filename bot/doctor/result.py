"""The doctor's answer: one line per check, with a fix for each that failed.

A check is ``ok``, ``warn`` (works, but degraded: say what), ``fail`` (broken: the fix says what to
do), ``unknown`` (doctor itself could not read what it needed: never a verdict) or ``skip`` (not
configured here). The exit status follows ``bot.exit_codes``: an incomplete answer (3) outranks
broken checks (4), as for a diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bot.exit_codes import ExitCode

Status = Literal["ok", "warn", "fail", "unknown", "skip"]


@dataclass(frozen=True)
class CheckLine:
    """One check's verdict."""

    #: stable id, e.g. ``rbac.reads``, ``agents``, ``slack.bot-token``
    name: str
    status: Status
    #: one line: what was found
    text: str
    #: what to do about it (fail, warn, unknown)
    fix: str = ""
    #: one entry per node, permission or scope the line summarises
    details: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "status": self.status, "text": self.text, "fix": self.fix,
                "details": list(self.details)}


@dataclass
class DoctorReport:
    """Every check of one run, in the order they ran."""

    #: what was checked: the cluster (and context), the node access, the state backend
    subject: str
    checks: list[CheckLine] = field(default_factory=list)
    elapsed_s: float = 0.0

    def add(self, *lines: CheckLine) -> None:
        self.checks.extend(lines)

    @property
    def broken(self) -> list[CheckLine]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def unread(self) -> list[CheckLine]:
        return [c for c in self.checks if c.status == "unknown"]

    @property
    def exit_code(self) -> ExitCode:
        if self.unread:
            return ExitCode.INCOMPLETE
        return ExitCode.FINDINGS if self.broken else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "exit_code": int(self.exit_code), "broken": len(self.broken),
                "unread": len(self.unread), "checks": [c.to_dict() for c in self.checks]}
