"""The package boundaries of DESIGN.md, checked on the import graph (an import-linter in a test).

slack/cli → service → engine → probes; actions → probes; nothing but actions writes. A module
that imports across a forbidden edge fails here with the offending line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[2] / "bot"

#: package → prefixes it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "bot.probes": ("bot.actions", "bot.slack", "bot.cli", "bot.service", "bot.confirm", "bot.engine.checks"),
    "bot.engine": ("bot.actions", "bot.slack", "bot.cli", "bot.service", "bot.confirm", "bot.remediation"),
    "bot.confirm": ("bot.actions", "bot.slack", "bot.cli", "bot.engine", "bot.probes"),
    # actions are what gets confirmed; they never know who confirms them
    "bot.actions": ("bot.slack", "bot.cli", "bot.engine.checks", "bot.confirm", "bot.remediation"),
    "bot.sim": ("bot.actions", "bot.slack", "bot.engine", "bot.service", "bot.confirm"),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(BOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


MODULES = sorted(BOT.rglob("*.py"))


def test_modules_found() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_no_import_crosses_a_forbidden_edge(path: Path) -> None:
    name = _module_name(path)
    rules = [bad for pkg, bad in FORBIDDEN.items() if name == pkg or name.startswith(pkg + ".")]
    problems = [
        f"{path.relative_to(BOT.parent)}:{line}: imports {module}"
        for line, module in _imports(path)
        for bad in rules
        for prefix in bad
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert not problems, "\n".join(problems)


def test_ssh_write_commands_appear_only_in_actions_and_the_simulator() -> None:
    writes = ("systemctl restart", "systemctl stop", "systemctl start", "kubelet_internal_checkpoint.bak")
    offenders = []
    for path in MODULES:
        name = _module_name(path)
        if name.startswith(("bot.actions", "bot.sim")):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{name}: {w!r}" for w in writes if w in text and not _only_in_text(text, w)]
    assert not offenders, offenders


def _only_in_text(source: str, needle: str) -> bool:
    """True when the needle occurs only in docstrings/comments-like prose, not in a command string."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        # a sentence (help text, finding wording) mentions the command; a command string starts with it
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().startswith(needle):
            return False
    return True
