"""Loading runbooks from a directory, and the text views of guidance runbooks.

This is the public face of the runbook machinery: ``load_runbooks`` (validate everything, raise
``RunbookError`` listing every ``file:line: problem``), ``validate_dir`` (the same problems as a
list, for ``gpubot runbook --check`` and tests), ``render_template`` and the guidance views.
The schema is documented in ``runbooks/README.md``.

Runbooks are data. This module must never execute, import or shell out anything found in a
runbook file; ``examples`` in guidance are text for a person to read.
"""

from __future__ import annotations

from pathlib import Path

import bot
from bot.engine.runbook_model import (
    SEVERITIES,
    FindingTemplate,
    GuideSection,
    GuideTable,
    RemediationTemplate,
    Runbook,
    RunbookSet,
)
from bot.engine.runbook_schema import Doc, assemble
from bot.engine.runbook_text import render_table, render_template, render_title, wrap_paragraphs
from bot.engine.yaml_marks import YamlSyntaxError, parse_yaml
from bot.errors import RunbookError
from bot.registry import Registry, load_builtin

__all__ = [
    "SEVERITIES",
    "FindingTemplate",
    "GuideSection",
    "GuideTable",
    "RemediationTemplate",
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

#: larger files are refused unread: runbooks are small, and a ConfigMap holds at most 1 MiB
MAX_FILE_BYTES = 1024 * 1024
SUFFIXES = (".yaml", ".yml")


def default_runbook_dir() -> Path:
    """The ``runbooks/`` directory shipped next to the ``bot`` package."""
    return Path(bot.__file__).resolve().parent.parent / "runbooks"


def _check(directory: str | Path | None, registry: Registry | None) -> tuple[RunbookSet, list[str]]:
    root = Path(directory) if directory else default_runbook_dir()
    if registry is None:
        registry = load_builtin()
    if not root.is_dir():
        return RunbookSet(directory=str(root)), [f"{root}: runbook directory not found"]
    docs: list[Doc] = []
    problems: list[str] = []
    # dot-files are skipped: a mounted ConfigMap keeps its real files under ``..data``
    files = sorted(
        p for p in root.iterdir() if p.suffix in SUFFIXES and not p.name.startswith(".") and p.is_file()
    )
    for path in files:
        source = str(path)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                problems.append(f"{source}:1: file is larger than {MAX_FILE_BYTES} bytes")
                continue
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{source}:1: not UTF-8 text ({exc.reason} at byte {exc.start})")
            continue
        except OSError as exc:
            problems.append(f"{source}:1: cannot read ({exc.strerror or exc})")
            continue
        try:
            parsed = parse_yaml(text)
        except YamlSyntaxError as exc:
            problems.append(f"{source}:{exc.line}: invalid YAML: {exc.message}")
            continue
        docs.append(Doc(source, parsed))
    rs, found = assemble(docs, registry, str(root))
    return rs, problems + found


def validate_dir(directory: str | Path | None, *, registry: Registry | None = None) -> list[str]:
    """Every problem in a runbook directory as ``FILE:LINE: problem`` lines (empty = valid).

    The built-in probes and checks are registered first, unless a ``registry`` is given.
    """
    return _check(directory, registry)[1]


def load_runbooks(directory: str | Path | None = None, *, registry: Registry | None = None) -> RunbookSet:
    """Load and validate a directory (``None``/``""`` = the packaged one); ``RunbookError`` if invalid."""
    rs, problems = _check(directory, registry)
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
