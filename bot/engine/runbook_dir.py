"""Validating a runbook set as a whole: finding the files, reading them, then the references between them.

Each file is parsed with line marks and checked on its own (``runbook_schema``); this module adds
what only the whole set can tell: exactly one catalogue, unique names and commands, checks whose
codes exist, templates that use only the parameters each code declares (``runbook_params``),
and ``docs``/``see_also`` references that name a real guide. It
must never execute or import anything a runbook names.

Where the files come from: the built-in set ships inside the package (``setup.py`` installs the
repository's ``runbooks/`` as ``bot/runbooks/``), so there is one source and no copy to keep in
sync. The bot's ``runbook_dir`` setting names an *override* directory layered on top of it
(``check_with_overrides``): a file there replaces the built-in file of the same name, any other
file adds a runbook, and the combined set is validated as one. ``check_dir`` validates one
directory on its own, as a complete set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import cast

import bot
from bot.engine import runbook_cache
from bot.engine.check import Check
from bot.engine.checks import builtin_checks
from bot.engine.runbook_model import FindingTemplate, Runbook, RunbookSet
from bot.engine.runbook_params import check_codes, check_params, declarations
from bot.engine.runbook_schema import (
    KINDS,
    Doc,
    check_keys,
    read_catalogue,
    read_diagnosis,
    read_guidance,
    suggest,
    type_name,
)
from bot.errors import RunbookError
from bot.yamlio.marks import YamlSyntaxError, parse_yaml

#: larger files are refused unread: runbooks are small, and a ConfigMap holds at most 1 MiB
MAX_FILE_BYTES = 1024 * 1024
SUFFIXES = (".yaml", ".yml")


def builtin_runbook_dir() -> Path:
    """The runbooks shipped with gpubot: ``bot/runbooks/`` in an installed package, else the
    ``runbooks/`` directory next to the ``bot`` package (a source checkout or an editable install)."""
    package = Path(bot.__file__).resolve().parent
    installed = package / "runbooks"
    return installed if installed.is_dir() else package.parent / "runbooks"


def default_runbook_dir() -> Path:
    """The directory ``check_dir(None)`` validates: the built-in runbooks."""
    return builtin_runbook_dir()


def runbook_files(root: Path) -> list[Path]:
    """The runbook files of a directory, by name: top-level ``*.yaml``/``*.yml``, no dot-files."""
    # dot-files are skipped: a mounted ConfigMap keeps its real files under ``..data``
    return sorted(
        (p for p in root.iterdir() if p.suffix in SUFFIXES and not p.name.startswith(".") and p.is_file()),
        key=lambda p: p.name,
    )


def check_dir(directory: str | Path | None, checks: Mapping[str, Check] | None) -> tuple[RunbookSet, list[str]]:
    """Read and validate every runbook file of one directory as a complete set (``None``/``""`` =
    the built-in one); the set is only usable with no problems."""
    root = Path(directory) if directory else default_runbook_dir()
    if not root.is_dir():
        return RunbookSet(directory=str(root)), [f"{root}: runbook directory not found"]
    return _check_files(runbook_files(root), checks, str(root))


def check_with_overrides(
    overrides: str | Path | None, checks: Mapping[str, Check] | None
) -> tuple[RunbookSet, list[str]]:
    """The built-in runbooks with the files of ``overrides`` layered on top, validated as one set.

    A file in ``overrides`` replaces the built-in file with the same name (``why-pending.yaml``
    replaces ``why-pending.yaml``; ``why-pending.yml`` would be a second file); every other file
    adds a runbook. Problems name the file they are in, built-in or override. ``None``/``""`` =
    the built-in runbooks alone; a directory that does not exist is a problem, not "no overrides".
    """
    builtin = builtin_runbook_dir()
    if not builtin.is_dir():
        return RunbookSet(directory=str(builtin)), [f"{builtin}: built-in runbook directory not found"]
    files = {p.name: p for p in runbook_files(builtin)}
    if not overrides:
        return _check_files(list(files.values()), checks, str(builtin))
    root = Path(overrides)
    if not root.is_dir():
        return RunbookSet(directory=str(root)), [f"{root}: runbook override directory not found"]
    files.update((p.name, p) for p in runbook_files(root))
    return _check_files(sorted(files.values(), key=lambda p: p.name), checks, str(root))


def load_with_overrides(overrides: str | Path | None, *, checks: Mapping[str, Check] | None = None) -> RunbookSet:
    """``check_with_overrides`` for the bot: the set, or ``RunbookError`` listing every problem."""
    rs, problems = check_with_overrides(overrides, checks)
    if problems:
        raise RunbookError(problems)
    return rs


#: validated sets against the built-in checks, by (directory, each file's path, mtime and size):
#: a process that builds several services, or a test suite that runs hundreds of in-process
#: commands, parsed and cross-checked the same unchanged files each time (~0.1 s a time); a
#: changed, added or removed file is a new key
_VALIDATED: dict[runbook_cache.SetKey, tuple[RunbookSet, list[str]]] = {}


def _set_key(files: list[Path], directory: str) -> runbook_cache.SetKey:
    """What a validated set is kept under: its directory and each file's path, mtime and size."""
    return directory, tuple((str(p), st.st_mtime_ns, st.st_size) for p in files for st in [p.stat()])


def _check_files(files: list[Path], checks: Mapping[str, Check] | None, directory: str) -> tuple[RunbookSet, list[str]]:
    """Read and parse ``files``, then validate them together as one set."""
    key = None
    if checks is None:
        try:
            key = _set_key(files, directory)
        except OSError:
            key = None  # read below, where the problem is named
        if key is not None and key not in _VALIDATED and (kept := runbook_cache.load(key)) is not None:
            _VALIDATED[key] = kept  # validated by an earlier process (bot/engine/runbook_cache.py)
        if key in _VALIDATED:
            rs, problems = _VALIDATED[key]
            # the caller's own mappings (the runbooks in them are shared: swap one, never edit it): one that swaps a
            # runbook for a variant changes no later caller's set
            mine = replace(rs, catalogue=dict(rs.catalogue), diagnoses=dict(rs.diagnoses), guides=dict(rs.guides))
            return mine, list(problems)
        checks = builtin_checks()
    rs, problems = _read_and_assemble(files, checks, directory)
    if key is not None:
        _VALIDATED[key] = (rs, list(problems))
        runbook_cache.save(key, rs, problems)
    return rs, problems


def keep_builtin() -> list[str]:
    """Validate the built-in set and keep it for later processes even under
    ``PYTHONDONTWRITEBYTECODE`` (``python -m bot.precompile`` runs it after ``compileall``).
    Returns its problems (none: valid), for the step to name them."""
    builtin = builtin_runbook_dir()
    files = runbook_files(builtin)
    key = _set_key(files, str(builtin))
    rs, problems = _read_and_assemble(files, builtin_checks(), str(builtin))
    runbook_cache.save(key, rs, problems, always=True)
    return problems


def _read_and_assemble(
    files: list[Path], checks: Mapping[str, Check], directory: str
) -> tuple[RunbookSet, list[str]]:
    docs: list[Doc] = []
    problems: list[str] = []
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
    rs, found = assemble(docs, checks, directory)
    return rs, problems + found


def assemble(docs: list[Doc], checks: Mapping[str, Check], directory: str) -> tuple[RunbookSet, list[str]]:
    """Validate each document, then the references between them; return the set and all problems."""
    rs = RunbookSet(directory=directory)
    catalogue_doc: Doc | None = None
    runbooks: list[tuple[Doc, Runbook]] = []
    for doc in docs:
        for line, problem in doc.parsed.problems:
            doc.problems.append(f"{doc.source}:{line}: {problem}")
        data = doc.parsed.value
        if not isinstance(data, dict):
            doc.err((), f"a runbook file must be one YAML mapping with 'kind', not {type_name(data)}")
            continue
        kind = data.get("kind")
        if kind not in KINDS:
            doc.err(("kind",), f"kind must be one of {', '.join(sorted(KINDS))}, not {kind!r}")
            continue
        check_keys(
            doc,
            data,
            (),
            KINDS[kind],
            "the findings catalogue" if kind == "findings" else f"a {kind} runbook",
        )
        for dup in doc.parsed.duplicates:
            what = "finding code" if kind == "findings" and dup.path == ("findings",) else "key"
            doc.problems.append(
                f"{doc.source}:{dup.line}: duplicate {what} '{dup.key}' (first at line {dup.first_line})"
            )
        if kind == "findings":
            if catalogue_doc is not None:
                doc.err(("kind",), f"a second findings catalogue; the first is {catalogue_doc.source}")
                continue
            catalogue_doc = doc
            rs.catalogue, rs.placeholders = read_catalogue(doc, data)
        elif kind == "diagnosis":
            runbooks.append((doc, read_diagnosis(doc, data, checks)))
        else:
            runbooks.append((doc, read_guidance(doc, data)))
    _cross_check(rs, runbooks, catalogue_doc, checks)
    problems = [p for doc in docs for p in doc.problems]
    if catalogue_doc is None:
        problems.insert(
            0, f"{directory}: no findings catalogue (a file with 'kind: findings', e.g. findings.yaml)"
        )
    return rs, problems


def _cross_check(
    rs: RunbookSet, runbooks: list[tuple[Doc, Runbook]], catalogue_doc: Doc | None, checks: Mapping[str, Check]
) -> None:
    names: dict[str, Runbook] = {}
    for doc, rb in runbooks:
        if rb.name in names:
            first = names[rb.name]
            doc.err(("name",), f"runbook name '{rb.name}' is already used by {first.source}:{first.line}")
        elif rb.name:
            names[rb.name] = rb
            if rb.kind == "guidance":
                rs.guides[rb.name] = rb
        if rb.kind == "diagnosis" and rb.command:
            if rb.command in rs.diagnoses:
                first = rs.diagnoses[rb.command]
                doc.err(
                    ("command",), f"command '{rb.command}' already has a runbook: {first.source}:{first.line}"
                )
            else:
                rs.diagnoses[rb.command] = rb
    for doc, rb in runbooks:
        if catalogue_doc is not None:
            for name, i in rb.checks.items():
                for code in checks[name].emits if name in checks else ():
                    if code not in rs.catalogue:
                        doc.err(
                            ("checks", i),
                            f"check '{name}' emits '{code}', which is not in the findings catalogue"
                            + suggest(code, rs.catalogue),
                        )
        for key in ("see_also",):
            for i, ref in enumerate(cast(list[str], getattr(rb, key))):
                if ref not in rs.guides:
                    doc.err((key, i), f"no guidance runbook named '{ref}'{suggest(ref, rs.guides)}")
    if catalogue_doc is not None:
        findings = cast(dict[str, object], catalogue_doc.parsed.value).get("findings")
        check_params(catalogue_doc, findings, declarations(check_codes(checks)), rs.placeholders)
        for template in rs.catalogue.values():
            _check_causes(catalogue_doc, template, rs.catalogue)
            if template.docs and template.docs not in rs.guides:
                catalogue_doc.err(
                    ("findings", template.code, "docs"),
                    f"docs of {template.code}: no guidance runbook named '{template.docs}'"
                    + suggest(template.docs, rs.guides),
                )


def _check_causes(doc: Doc, template: FindingTemplate, catalogue: Mapping[str, FindingTemplate]) -> None:
    """``consequence_of`` names codes of the catalogue, and following it never comes back to the
    finding (a cycle would leave no cause to fold under)."""
    for i, cause in enumerate(template.consequence_of):
        path = ("findings", template.code, "consequence_of", i)
        if cause not in catalogue:
            doc.err(path, f"consequence_of of {template.code}: no finding '{cause}'{suggest(cause, catalogue)}")
        elif template.code in _causes_behind(cause, catalogue):
            doc.err(path, f"consequence_of of {template.code}: {cause} leads back to {template.code} (a cycle)")


def _causes_behind(code: str, catalogue: Mapping[str, FindingTemplate]) -> set[str]:
    """Every code reachable from ``code`` through ``consequence_of``, ``code`` included."""
    seen: set[str] = set()
    todo = [code]
    while todo:
        current = todo.pop()
        if current in seen or current not in catalogue:
            continue
        seen.add(current)
        todo.extend(catalogue[current].consequence_of)
    return seen
