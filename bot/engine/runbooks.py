"""Loading runbooks from a directory, and the text views of guidance runbooks.

This is the public face of the runbook machinery: ``load_runbooks`` (validate everything, raise
``RunbookError`` listing every ``file:line: problem``), ``validate_dir`` (the same problems as a
list, for ``gpubot runbook --check`` and tests), ``render_template`` and the guidance views.
The schema is documented in ``runbooks/README.md``.

Runbooks are data. This module must never execute, import or shell out anything found in a
runbook file; ``examples`` in guidance are text for a person to read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.engine.check import Check
from bot.engine.runbook_dir import check_dir, default_runbook_dir
from bot.engine.runbook_model import (
    SEVERITIES,
    FindingTemplate,
    GuideSection,
    GuideTable,
    OfferTemplate,
    Runbook,
    RunbookSet,
)
from bot.engine.runbook_text import render_table, render_template, render_title, wrap_paragraphs
from bot.errors import RunbookError

__all__ = [
    "SEVERITIES",
    "FindingTemplate",
    "GuideSection",
    "GuideTable",
    "OfferTemplate",
    "Runbook",
    "RunbookSet",
    "default_runbook_dir",
    "list_guides",
    "load_runbooks",
    "render_guide_text",
    "render_template",
    "render_title",
    "validate_dir",
]


def validate_dir(directory: str | Path | None, *, checks: Mapping[str, Check] | None = None) -> list[str]:
    """Every problem in a runbook directory as ``FILE:LINE: problem`` lines (empty = valid).

    Check names are resolved against the built-in checks unless ``checks`` is given.
    """
    return check_dir(directory, checks)[1]


def load_runbooks(directory: str | Path | None = None, *, checks: Mapping[str, Check] | None = None) -> RunbookSet:
    """Load and validate a directory (``None``/``""`` = the packaged one); ``RunbookError`` if invalid."""
    rs, problems = check_dir(directory, checks)
    if problems:
        raise RunbookError(problems)
    return rs


def list_guides(rs: RunbookSet) -> list[tuple[str, str]]:
    """(name, summary) of every guidance runbook, sorted by name."""
    return sorted((name, rb.summary) for name, rb in rs.guides.items())


def render_guide_text(rb: Runbook, *, width: int = 100) -> str:
    """A guidance runbook as plain text: title, summary, sections with examples and tables."""
    width = max(40, width)
    lines = wrap_paragraphs(rb.title or rb.name, width)
    lines.append("=" * max(len(line) for line in lines))
    if rb.summary:
        lines += wrap_paragraphs(rb.summary, width)
    for section in rb.sections:
        heading = wrap_paragraphs(section.heading, width)
        lines += ["", *heading, "-" * max(len(line) for line in heading)]
        if section.text:
            lines += wrap_paragraphs(section.text, width)
        if section.examples:
            if section.text:
                lines.append("")
            previous_long = False
            for i, example in enumerate(section.examples):
                example_lines = example.rstrip().splitlines() or [""]
                # multi-line examples are separate scripts: a blank line keeps them apart
                if i and (previous_long or len(example_lines) > 1):
                    lines.append("")
                lines += ["    " + ln.rstrip() for ln in example_lines]
                previous_long = len(example_lines) > 1
        if section.table is not None:
            if section.text or section.examples:
                lines.append("")
            lines += render_table(section.table.columns, section.table.rows, width=width, indent="  ")
    if rb.see_also:
        lines += ["", *wrap_paragraphs("See also: " + ", ".join(rb.see_also), width)]
    if any(s.examples for s in rb.sections):
        lines += [""] + wrap_paragraphs(
            "(Commands above are for you to read and run yourself; gpubot never runs them.)", width
        )
    return "\n".join(lines) + "\n"
