"""Validation of runbook documents, one file at a time and then across the whole directory.

Every problem becomes one ``FILE:LINE: what is wrong`` line, so an operator editing a ConfigMap
sees all mistakes at once. Unknown keys are errors (a typo must not silently drop a field), and
probe/check names are checked against the registry, so a runbook can only name code that
exists. This module must never execute, import or format anything a runbook contains.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from bot.engine.check import Check
from bot.engine.runbook_model import (
    SEVERITIES,
    FindingTemplate,
    GuideSection,
    GuideTable,
    OfferTemplate,
    Role,
    Runbook,
    StepTemplate,
)
from bot.engine.runbook_text import MAX_TITLE, placeholder_problems, template_fields
from bot.registry import ACTIONS
from bot.report import Severity
from bot.yamlio.marks import Parsed, YamlPath

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

KINDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required, optional)
    "findings": ({"kind", "findings"}, {"placeholders"}),
    "diagnosis": ({"kind", "name", "command", "summary", "checks"}, {"tables", "views"}),
    "guidance": ({"kind", "name", "title", "summary", "sections"}, {"covers", "see_also"}),
}
_FINDING_KEYS = (
    {"severity", "title", "explanation", "next_steps"},
    {"rank", "offers", "roles", "unless", "consequence_of", "docs"},
)
_OFFER_KEYS = ({"action", "summary"}, {"params", "when", "when_not", "each"})
_STEP_KEYS = ({"step"}, {"when", "when_not"})
_ROLE_KEYS = ({"rank"}, {"severity"})
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
#: report sections a diagnosis runbook may ask for besides its findings
VIEWS = frozenset({"node_table"})
_SECTION_KEYS = ({"heading"}, {"text", "examples", "table"})
_TABLE_KEYS = ({"columns", "rows"}, set[str]())


@dataclass
class Doc:
    """One parsed file and the problems found in it."""

    source: str
    parsed: Parsed
    problems: list[str] = field(default_factory=list)

    def err(self, path: YamlPath, message: str) -> None:
        self.problems.append(f"{self.source}:{self.parsed.line(path)}: {message}")

    def at(self, path: YamlPath) -> int:
        return self.parsed.line(path)


# ---------------------------------------------------------------------------------------------
# small typed readers: each reports a problem and returns a safe default


def check_keys(
    doc: Doc, obj: Mapping[Any, Any], path: YamlPath, spec: tuple[set[str], set[str]], what: str
) -> None:
    required, optional = spec
    allowed = required | optional
    for key in obj:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.75)
            hint = f"; did you mean '{close[0]}'?" if close else f"; allowed: {', '.join(sorted(allowed))}"
            doc.err((*path, str(key)), f"unknown key '{key}' in {what}{hint}")
    for key in sorted(required - set(obj)):
        doc.err(path, f"{what} is missing required key '{key}'")


def _text(doc: Doc, obj: Mapping[Any, Any], key: str, path: YamlPath, *, one_line: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        doc.err((*path, key), f"'{key}' must be text, not {type_name(value)}")
        return ""
    if not value.strip():
        doc.err((*path, key), f"'{key}' is empty")
    if one_line and "\n" in value.strip():
        doc.err((*path, key), f"'{key}' must be one line")
    return value


def _text_list(doc: Doc, obj: Mapping[Any, Any], key: str, path: YamlPath) -> list[str]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        doc.err((*path, key), f"'{key}' must be a list, not {type_name(value)}")
        return []
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            doc.err((*path, key, i), f"'{key}' item {i + 1} must be non-empty text, not {type_name(item)}")
        else:
            out.append(item)
    return out


def type_name(value: object) -> str:
    """How a wrong value's type reads in a problem line."""
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def _placeholders(doc: Doc, text: str, path: YamlPath, declared: frozenset[str]) -> None:
    for problem in placeholder_problems(text):
        doc.err(path, problem)
    if declared:
        for name in template_fields(text):
            if name not in declared:
                close = difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.75)
                hint = f"; did you mean '{{{close[0]}}}'?" if close else ""
                doc.err(path, f"unknown placeholder '{{{name}}}' (not in the catalogue's placeholders){hint}")


# ---------------------------------------------------------------------------------------------
# per kind


def read_catalogue(doc: Doc, data: Mapping[Any, Any]) -> tuple[dict[str, FindingTemplate], frozenset[str]]:
    """The finding templates of a ``kind: findings`` document (duplicates reported by the caller)."""
    names = _text_list(doc, data, "placeholders", ())
    for i, name in enumerate(names):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            doc.err(("placeholders", i), f"placeholder name '{name}' is not a plain identifier")
    declared = frozenset(names)
    entries = data.get("findings")
    catalogue: dict[str, FindingTemplate] = {}
    if entries is None:
        return catalogue, declared
    if not isinstance(entries, dict):
        doc.err(("findings",), f"'findings' must be a mapping of code -> entry, not {type_name(entries)}")
        return catalogue, declared
    for code, entry in entries.items():
        path: YamlPath = ("findings", str(code))
        if not isinstance(code, str) or not _CODE.match(code):
            doc.err(path, f"finding code '{code}' must be UPPER_SNAKE_CASE")
            continue
        if not isinstance(entry, dict):
            doc.err(path, f"finding {code} must be a mapping, not {type_name(entry)}")
            continue
        template = _read_finding(doc, code, entry, path, declared)
        if template is not None:
            catalogue[code] = template
    return catalogue, declared


def _read_finding(
    doc: Doc, code: str, entry: Mapping[Any, Any], path: YamlPath, declared: frozenset[str]
) -> FindingTemplate | None:
    check_keys(doc, entry, path, _FINDING_KEYS, f"finding {code}")
    severity = _severity(doc, entry.get("severity"), (*path, "severity"), code)
    rank = _rank(doc, entry.get("rank", 50), (*path, "rank"), code)
    title = _text(doc, entry, "title", path, one_line=True)
    if len(title.strip()) > MAX_TITLE:
        doc.err((*path, "title"), f"title of {code} is {len(title.strip())} characters; at most {MAX_TITLE}")
    explanation = _text(doc, entry, "explanation", path)
    steps = _steps(doc, code, entry.get("next_steps"), (*path, "next_steps"), declared)
    _placeholders(doc, title, (*path, "title"), declared)
    _placeholders(doc, explanation, (*path, "explanation"), declared)
    offers = _offers(doc, code, entry.get("offers"), (*path, "offers"), declared)
    roles = _roles(doc, code, entry.get("roles"), (*path, "roles"), severity)
    unless = _text_list(doc, entry, "unless", path)
    for i, pattern in enumerate(unless):
        if not _CODE.match(pattern.rstrip("*").rstrip("_") or "?"):
            doc.err((*path, "unless", i), f"'{pattern}' is not a finding code or CODE_PREFIX_*")
    consequence_of = []
    for i, cause in enumerate(_text_list(doc, entry, "consequence_of", path)):
        if not _CODE.match(cause) or cause == code:
            doc.err((*path, "consequence_of", i), f"'{cause}' is not another finding's code")
        else:
            consequence_of.append(cause)
    docs = _text(doc, entry, "docs", path, one_line=True).strip()
    return FindingTemplate(
        code=code,
        severity=severity,
        title=title.strip(),
        explanation=explanation,
        next_steps=steps,
        offers=offers,
        rank=rank,
        roles=roles,
        unless=tuple(unless),
        consequence_of=tuple(consequence_of),
        docs=docs,
        source=doc.source,
        line=doc.at(path),
    )


def _severity(doc: Doc, value: object, path: YamlPath, code: str) -> Severity:
    if value not in SEVERITIES:
        doc.err(path, f"severity of {code} must be one of {', '.join(SEVERITIES)}, not {value!r}")
        return "info"
    return cast(Severity, value)


def _rank(doc: Doc, value: object, path: YamlPath, code: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        doc.err(path, f"rank of {code} must be a whole number from 0 to 100, not {value!r}")
        return 50
    return value


def _offers(
    doc: Doc, code: str, raw: object, path: YamlPath, declared: frozenset[str]
) -> list[OfferTemplate]:
    """The offers of one finding: known actions, every required parameter bound, plain templates."""
    out: list[OfferTemplate] = []
    for i, item in enumerate(_listed(doc, raw, path, "offers")):
        opath = (*path, i)
        if not isinstance(item, dict):
            doc.err(opath, f"offer {i + 1} of {code} must be a mapping with action and summary")
            continue
        check_keys(doc, item, opath, _OFFER_KEYS, f"an offer of {code}")
        action = item.get("action")
        if not isinstance(action, str) or action not in ACTIONS:
            close = difflib.get_close_matches(str(action), sorted(ACTIONS), n=1, cutoff=0.75)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(sorted(ACTIONS))}"
            doc.err((*opath, "action"), f"unknown action '{action}' in {code}{hint}")
            continue
        summary = _text(doc, item, "summary", opath, one_line=True)
        _placeholders(doc, summary, (*opath, "summary"), declared)
        params_raw = item.get("params") or {}
        params: dict[str, str] = {}
        if not isinstance(params_raw, dict):
            doc.err((*opath, "params"), f"'params' must be a mapping of name -> template, not {type_name(params_raw)}")
            params_raw = {}
        for key, value in params_raw.items():
            if not isinstance(value, str) or not value.strip():
                doc.err((*opath, "params", str(key)), f"parameter '{key}' of {action} must be non-empty text")
                continue
            _placeholders(doc, value, (*opath, "params", str(key)), declared)
            params[str(key)] = value
        for missing in sorted(ACTIONS[action] - set(params)):
            doc.err((*opath, "params"), f"offer {action} of {code} does not bind required parameter '{missing}'")
        conds = _conditions(doc, item, opath, declared, ("when", "when_not", "each"))
        out.append(OfferTemplate(action, summary.strip(), params, conds["when"], conds["when_not"], conds["each"]))
    return out


def _listed(doc: Doc, raw: object, path: YamlPath, key: str) -> list[Any]:
    """``raw`` as the list ``key`` must be: none is empty, anything else is reported and empty."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        doc.err(path, f"'{key}' must be a list, not {type_name(raw)}")
        return []
    return raw


def _conditions(
    doc: Doc, item: Mapping[Any, Any], path: YamlPath, declared: frozenset[str], keys: tuple[str, ...]
) -> dict[str, str]:
    """An offer's or a step's ``when``/``when_not`` (and an offer's ``each``): each a parameter the
    catalogue declares, "" where unset or wrong (the wrong one reported)."""
    conds = {}
    for key in keys:
        value = item.get(key, "")
        if value and (not isinstance(value, str) or not _IDENT.match(value)):
            doc.err((*path, key), f"'{key}' must name a finding parameter (lower_snake_case)")
            value = ""
        elif value and declared and value not in declared:
            doc.err((*path, key), f"'{key}': unknown parameter '{value}' (not in the catalogue's placeholders)")
        conds[key] = str(value or "")
    return conds


def _steps(doc: Doc, code: str, raw: object, path: YamlPath, declared: frozenset[str]) -> list[StepTemplate]:
    """The next steps of one finding: text, or ``{step: text, when: param}`` for a step that
    applies only where a parameter is truthy (``when_not``: falsy)."""
    out: list[StepTemplate] = []
    for i, item in enumerate(_listed(doc, raw, path, "next_steps")):
        spath = (*path, i)
        if isinstance(item, dict):
            check_keys(doc, item, spath, _STEP_KEYS, f"a next step of {code}")
            conds = _conditions(doc, item, spath, declared, ("when", "when_not"))
            if "step" not in item:
                continue  # reported by check_keys
            text, tpath = item["step"], (*spath, "step")
        else:
            text, conds, tpath = item, {"when": "", "when_not": ""}, spath
        if not isinstance(text, str) or not text.strip():
            doc.err(tpath, f"'next_steps' item {i + 1} must be non-empty text, not {type_name(text)}")
            continue
        _placeholders(doc, text, tpath, declared)
        out.append(StepTemplate(text, conds["when"], conds["when_not"]))
    return out


def _roles(doc: Doc, code: str, raw: object, path: YamlPath, default: Severity) -> dict[str, Role]:
    """Cases of a finding with their own rank (and severity; the finding's when not given)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        doc.err(path, f"'roles' must be a mapping of role -> {{rank, severity}}, not {type_name(raw)}")
        return {}
    out: dict[str, Role] = {}
    for name, entry in raw.items():
        rpath = (*path, str(name))
        if not isinstance(name, str) or not _IDENT.match(name):
            doc.err(rpath, f"role name '{name}' must be lower_snake_case")
            continue
        if not isinstance(entry, dict):
            doc.err(rpath, f"role {name} of {code} must be a mapping with rank and optional severity")
            continue
        check_keys(doc, entry, rpath, _ROLE_KEYS, f"role {name} of {code}")
        severity = entry.get("severity")
        out[name] = Role(
            _severity(doc, severity, (*rpath, "severity"), code) if severity is not None else default,
            _rank(doc, entry.get("rank", 50), (*rpath, "rank"), code),
        )
    return out


def read_diagnosis(doc: Doc, data: Mapping[Any, Any], checks: Mapping[str, Check]) -> Runbook:
    rb = Runbook(kind="diagnosis", name=_name(doc, data, guide=False), source=doc.source, line=doc.at(("name",)))
    rb.summary = _text(doc, data, "summary", (), one_line=True).strip()
    rb.command = _text(doc, data, "command", (), one_line=True).strip()
    if rb.command and not _DNS_LABEL.match(rb.command):
        doc.err(("command",), f"command '{rb.command}' must be lowercase letters, digits and '-'")
    rb.checks = _expand_checks(doc, _text_list(doc, data, "checks", ()), checks)
    rb.tables = _tables(doc, data)
    rb.views = _text_list(doc, data, "views", ())
    for i, view in enumerate(rb.views):
        if view not in VIEWS:
            doc.err(("views", i), f"unknown view '{view}'; known: {', '.join(sorted(VIEWS))}")
    for name, i in rb.checks.items():
        for table in checks[name].tables:
            if table not in rb.tables:
                doc.err(("checks", i), f"check '{name}' reads table '{table}', which is not in tables")
    return rb


def _expand_checks(doc: Doc, items: list[str], checks: Mapping[str, Check]) -> dict[str, int]:
    """Check names and ``family.*`` patterns -> the matching checks, each with its list index.

    A pattern lets a new check join every runbook of its family without editing them; a pattern
    that matches nothing, an unknown name and a name listed twice are problems.
    """
    out: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.endswith(".*"):
            found = sorted(n for n in checks if n.startswith(item[:-1]))
            if not found:
                doc.err(("checks", i), f"pattern '{item}' matches no check")
        elif item in checks:
            found = [item]
        else:
            doc.err(("checks", i), f"unknown check '{item}'{suggest(item, checks)}")
            continue
        for name in found:
            if name in out and not item.endswith(".*"):
                doc.err(("checks", i), f"'{item}' is listed twice in checks")
            out.setdefault(name, i)
    return out


def _tables(doc: Doc, data: Mapping[Any, Any]) -> dict[str, list[dict[str, Any]]]:
    raw = data.get("tables")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        doc.err(("tables",), f"'tables' must be a mapping of name -> rows, not {type_name(raw)}")
        return {}
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, rows in raw.items():
        path: YamlPath = ("tables", str(name))
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            doc.err(path, f"table name '{name}' must be lower_snake_case")
            continue
        if not isinstance(rows, list) or not rows:
            doc.err(path, f"table '{name}' must be a non-empty list of rows")
            continue
        good: list[dict[str, Any]] = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or not row:
                doc.err((*path, i), f"row {i + 1} of table '{name}' must be a mapping")
                continue
            for key, value in row.items():
                if not isinstance(key, str):
                    doc.err((*path, i, str(key)), f"column names of table '{name}' must be text")
                elif not _cell_ok(value):
                    doc.err(
                        (*path, i, key), f"cell '{key}' of table '{name}' must be a value or a list of values"
                    )
            good.append(row)
        tables[name] = good
    return tables


def _cell_ok(value: object) -> bool:
    scalar = (str, int, float, bool, type(None))
    if isinstance(value, list):
        return all(isinstance(v, scalar) for v in value)
    return isinstance(value, scalar)


def read_guidance(doc: Doc, data: Mapping[Any, Any]) -> Runbook:
    rb = Runbook(
        kind="guidance", name=_name(doc, data, guide=True), source=doc.source, line=doc.at(("name",))
    )
    rb.title = _text(doc, data, "title", (), one_line=True).strip()
    rb.summary = _text(doc, data, "summary", (), one_line=True).strip()
    rb.covers = _text_list(doc, data, "covers", ())
    rb.see_also = _text_list(doc, data, "see_also", ())
    raw = data.get("sections")
    if raw is not None and (not isinstance(raw, list) or not raw):
        doc.err(("sections",), "'sections' must be a non-empty list")
        raw = []
    for i, item in enumerate(raw or []):
        path: YamlPath = ("sections", i)
        if not isinstance(item, dict):
            doc.err(path, f"section {i + 1} must be a mapping with a heading")
            continue
        check_keys(doc, item, path, _SECTION_KEYS, f"section {i + 1}")
        heading = _text(doc, item, "heading", path, one_line=True).strip()
        text = _text(doc, item, "text", path)
        examples = _text_list(doc, item, "examples", path)
        table = _guide_table(doc, item.get("table"), (*path, "table"))
        if not (text or examples or table):
            doc.err(path, f"section '{heading}' has no text, examples or table")
        rb.sections.append(GuideSection(heading, text.strip(), tuple(examples), table))
    return rb


def _guide_table(doc: Doc, raw: object, path: YamlPath) -> GuideTable | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        doc.err(path, "'table' must be a mapping with columns and rows")
        return None
    check_keys(doc, raw, path, _TABLE_KEYS, "a table")
    columns = _text_list(doc, raw, "columns", path)
    rows_raw = raw.get("rows")
    if not isinstance(rows_raw, list) or not rows_raw:
        doc.err((*path, "rows"), "'rows' must be a non-empty list of rows")
        return None
    rows: list[tuple[str, ...]] = []
    for i, row in enumerate(rows_raw):
        if not isinstance(row, list) or not all(isinstance(c, str | int | float) for c in row):
            doc.err((*path, "rows", i), f"row {i + 1} must be a list of cells")
        elif len(row) != len(columns):
            doc.err(
                (*path, "rows", i), f"row {i + 1} has {len(row)} cells; the table has {len(columns)} columns"
            )
        else:
            rows.append(tuple(str(c) for c in row))
    return GuideTable(tuple(columns), tuple(rows))


def _name(doc: Doc, data: Mapping[Any, Any], *, guide: bool) -> str:
    name = _text(doc, data, "name", (), one_line=True).strip()
    if not name:
        return ""
    if len(name) > 63 or not _DNS_LABEL.match(name):
        doc.err(
            ("name",), f"name '{name}' must be a DNS-1123 label (lowercase letters, digits, '-', at most 63)"
        )
    if guide and not name.startswith("guide-"):
        doc.err(("name",), f"guidance name '{name}' must start with 'guide-'")
    if not guide and name.startswith("guide-"):
        doc.err(("name",), f"name '{name}': the 'guide-' prefix is reserved for guidance runbooks")
    return name


def suggest(name: str, known: Mapping[str, object]) -> str:
    """'; did you mean X?' when a known name is close (typos), else nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f"; did you mean '{close[0]}'?" if close else ""
