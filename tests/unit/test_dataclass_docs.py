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


def _undocumented(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(BOT.parent)}:{node.lineno} {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(_is_dataclass_decorator(d) for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]


def test_every_dataclass_has_a_docstring() -> None:
    missing = [where for path in sorted(BOT.rglob("*.py")) for where in _undocumented(path)]
    assert not missing, "dataclasses without a docstring:\n" + "\n".join(missing)


def test_the_check_sees_a_dataclass_without_one(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from dataclasses import dataclass\nimport dataclasses\n\n"
        "@dataclass(frozen=True)\nclass Bare:\n    x: int\n\n"
        "@dataclasses.dataclass\nclass AlsoBare:\n    y: int\n\n"
        '@dataclass\nclass Told:\n    """Why."""\n\n    z: int\n\n'
        "class Plain:\n    pass\n",
        encoding="utf-8",
    )
    names = [line.split()[-1] for line in _undocumented_outside(source)]
    assert names == ["Bare", "AlsoBare"]


def _undocumented_outside(path: Path) -> list[str]:
    """``_undocumented`` for a file outside ``bot`` (the check's own test)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(_is_dataclass_decorator(d) for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]
