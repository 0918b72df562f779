"""Every gpubot dataclass says why it exists, in a docstring of its own.

Why a test: ``@dataclass`` gives a class without a docstring one made from its signature, and
makes it with ``inspect.signature`` while the module is imported: ~0.04 ms a class, paid by every
command that imports it (19 such classes were in a cold why-pending). A docstring is what the
style asks of every class anyway. Read from the source (``ast``), so nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[2] / "bot"


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass"
    )


def _undocumented(source: str) -> list[tuple[int, str]]:
    """(line, name) of each dataclass in ``source`` without a docstring of its own."""
    return [
        (node.lineno, node.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and any(_is_dataclass_decorator(d) for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]


def test_every_dataclass_has_a_docstring() -> None:
    missing = [
        f"{path.relative_to(BOT.parent)}:{line} {name}"
        for path in sorted(BOT.rglob("*.py"))
        for line, name in _undocumented(path.read_text(encoding="utf-8"))
    ]
    assert not missing, "dataclasses without a docstring:\n" + "\n".join(missing)


def test_the_check_sees_a_dataclass_without_one() -> None:
    source = (
        "from dataclasses import dataclass\nimport dataclasses\n\n"
        "@dataclass(frozen=True)\nclass Bare:\n    x: int\n\n"
        "@dataclasses.dataclass\nclass AlsoBare:\n    y: int\n\n"
        '@dataclass\nclass Told:\n    """Why."""\n\n    z: int\n\n'
        "class Plain:\n    pass\n"
    )
    assert [name for _, name in _undocumented(source)] == ["Bare", "AlsoBare"]

