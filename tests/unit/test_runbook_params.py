"""The catalogue binds to each code's declared parameters: a wrong name is a ``file:line`` problem
at validation, not a missing button or a ``{nodez}`` in a scenario run."""

from __future__ import annotations

import shutil
import typing
from pathlib import Path

import pytest

from bot.engine.check import Code
from bot.engine.checks import builtin_checks
from bot.engine.runbook_params import check_codes, declaration, declarations
from bot.engine.runbooks import validate_dir
from bot.engine.unreadable import CODES as READ_CODES

RUNBOOKS = Path(__file__).resolve().parents[2] / "runbooks"


def _edited(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """A copy of the shipped runbooks with ``old`` (exactly once in findings.yaml) replaced; the
    catalogue's path and the line of the edit."""
    target = tmp_path / "rb"
    shutil.copytree(RUNBOOKS, target)
    catalogue = target / "findings.yaml"
    text = catalogue.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    catalogue.write_text(text.replace(old, new), encoding="utf-8")
    return catalogue, text[: text.index(old)].count("\n") + 1


def test_every_builtin_code_is_declared_with_a_typeddict() -> None:
    for check in builtin_checks().values():
        for code in check.emits:
            assert isinstance(code, Code), (check.name, code)
            assert typing.is_typeddict(code.params), (check.name, code)
    assert all(isinstance(c, Code) for c in READ_CODES)


def test_a_code_emitted_by_two_checks_has_one_declaration() -> None:
    by_code: dict[str, set[int]] = {}
    for code in check_codes(builtin_checks()):
        by_code.setdefault(str(code), set()).add(id(code.params) if isinstance(code, Code) else 0)
    assert {c: ids for c, ids in by_code.items() if len(ids) > 1} == {}


def test_the_declaration_names_each_list_of_mappings_with_its_item_keys() -> None:
    decl = declarations(check_codes(builtin_checks()))
    cordoned = decl["SCHED_UNSCHEDULABLE_NODE"]
    assert cordoned.names == {"pod", "nodes", "count", "cordoned"}
    assert cordoned.lists == {"cordoned": {"node"}}
    assert cordoned.where == "bot/engine/checks/sched_cordoned.py"
    assert decl["TERMINATING_HOLDS_GPU"].lists == {"holders": {"namespace", "name", "ref"}}
    # NotRequired keys count: a template may use them (shown verbatim when the check leaves one out)
    assert "rbac" in declaration(READ_CODES[1]).names


def test_the_shipped_catalogue_uses_only_declared_parameters() -> None:
    assert validate_dir(RUNBOOKS) == []


def test_a_wrong_parameter_name_in_an_offer_is_caught_with_its_line(tmp_path: Path) -> None:
    # 'taint' is a placeholder of the catalogue (another code has it), so only the declaration can tell
    catalogue, line = _edited(
        tmp_path,
        '        each: cordoned\n        params: {node: "{node}"}',
        '        each: cordoned\n        params: {node: "{taint}"}',
    )
    assert validate_dir(catalogue.parent) == [
        f"{catalogue}:{line + 1}: placeholder '{{taint}}': SCHED_UNSCHEDULABLE_NODE has no such parameter "
        "(bot/engine/checks/sched_cordoned.py declares cordoned, count, node, nodes, pod)"
    ]


def test_a_wrong_placeholder_in_a_title_is_caught_with_a_suggestion(tmp_path: Path) -> None:
    catalogue, line = _edited(
        tmp_path,
        'title: "No node offers {resource} at all',
        'title: "No node offers {requested} at all',
    )
    assert validate_dir(catalogue.parent) == [
        f"{catalogue}:{line}: placeholder '{{requested}}': GPU_RESOURCE_NOT_ADVERTISED has no such parameter "
        "(bot/engine/checks/sched_not_advertised.py declares count, nodes, pod, resource, value)"
    ]


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "        each: cordoned\n",
            "        each: holders\n",
            "'each' names 'holders': SCHED_UNSCHEDULABLE_NODE has no such parameter "
            "(bot/engine/checks/sched_cordoned.py declares cordoned, count, nodes, pod); did you mean 'cordoned'?",
        ),
        (
            "        each: cordoned\n",
            "        each: nodes\n",
            "'each: nodes' needs a list of mappings; SCHED_UNSCHEDULABLE_NODE declares 'nodes' as something "
            "else (bot/engine/checks/sched_cordoned.py)",
        ),
        (
            "        when: kubelet_down\n",
            "        when: kubelet_dead\n",
            None,  # not a placeholder of the catalogue at all: the schema's line says so, once
        ),
    ],
)
def test_when_and_each_bind_to_declared_parameters(tmp_path: Path, old: str, new: str, problem: str | None) -> None:
    catalogue, line = _edited(tmp_path, old, new)
    problems = validate_dir(catalogue.parent)
    if problem is None:
        assert len(problems) == 1 and "not in the catalogue's placeholders" in problems[0], problems
    else:
        assert problems == [f"{catalogue}:{line}: {problem}"]


def test_a_step_condition_binds_to_a_declared_parameter(tmp_path: Path) -> None:
    # 'cordoned' is a placeholder of the catalogue (another code has it), so only the declaration can tell
    host_key = '      - step: "A host key'
    catalogue, line = _edited(tmp_path, f"        when: over_ssh\n{host_key}", f"        when: cordoned\n{host_key}")
    assert validate_dir(catalogue.parent) == [
        f"{catalogue}:{line}: 'when' names 'cordoned': NODE_UNREACHABLE has no such parameter "
        "(bot/engine/checks/node_reachability.py declares node, over_ssh, reason, via)"
    ]
