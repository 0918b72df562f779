"""The one label selector implementation, in both spellings, against the API server's answers.

The table (tests/data/selectors.yaml) is what the engine, the watch's routes and the simulator
all rely on: a row that flips here flips for all three.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.kube.selectors import (
    SelectorError,
    field_value,
    labels_match,
    matcher,
    parse_field_selector,
    parse_label_selector,
    requirements_of,
    selector_matches,
    selector_string,
    selector_text,
)

TABLE: dict[str, Any] = yaml.safe_load((Path(__file__).resolve().parents[1] / "data/selectors.yaml").read_text())


@pytest.mark.parametrize(("text", "labels", "matches"), TABLE["text"], ids=[r[0] or "(empty)" for r in TABLE["text"]])
def test_text_selector(text: str, labels: dict[str, str], matches: bool) -> None:
    requirements = parse_label_selector(text)
    assert labels_match(requirements, labels) is matches
    # the text the requirements print back parses to the same requirements
    assert parse_label_selector(",".join(str(r) for r in requirements)) == requirements


@pytest.mark.parametrize("text", TABLE["text_errors"])
def test_text_the_api_refuses(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


@pytest.mark.parametrize(("selector", "labels", "matches", "text"), TABLE["object"], ids=str)
def test_object_selector(selector: dict[str, Any] | None, labels: dict[str, str], matches: bool, text: str) -> None:
    assert selector_matches(selector, labels) is matches
    assert selector_string(selector) == text
    requirements = requirements_of(selector)
    if requirements is not None:
        # both spellings agree: the object's list-call text selects the same labels
        assert labels_match(parse_label_selector(text), labels) is matches


def test_selector_text_is_for_people() -> None:
    sel = {"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}
    assert selector_text(sel) == "app=db, tier in (a, b)"
    assert selector_text(None) == "(no selector: matches nothing)"
    assert selector_text({}) == "(every pod)"


def test_field_selectors_as_the_api_applies_them() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ai", "labels": {"app": "db"}},
           "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}}
    fields = parse_field_selector("spec.nodeName=gpu-1,status.phase!=Failed", "Pod")
    match = matcher(parse_label_selector("app=db"), fields)
    assert match is not None and match(pod)
    assert matcher((), ()) is None  # everything matches: the caller's fast path
    assert field_value({"spec": {}}, "spec.unschedulable") == "false"  # Go's zero value, as the API renders it
    assert parse_field_selector(r"metadata.name=a\,b", "Pod")[0].value == "a,b"
    with pytest.raises(SelectorError, match="not a known field selector"):
        parse_field_selector("spec.bogus=1", "Pod")
    with pytest.raises(SelectorError, match="can't understand"):
        parse_field_selector("spec.nodeName", "Pod")


@pytest.mark.parametrize(("text", "matches"), [
    ("status.phase!=Running,status.phase!=Succeeded,status.phase!=Failed", [False, True, False, True]),
    ("status.phase=Pending", [False, True, False, False]),
    ("status.phase=Pending,status.phase=Running", [False, False, False, False]),  # two values: none
    ("status.phase=Pending,status.phase==Pending", [False, True, False, False]),
    ("spec.hostNetwork=false,status.phase!=Failed", [True, True, False, True]),  # unset: Go's zero value
    ("spec.nodeName=", [False, True, True, True]),  # missing: the empty string
])
def test_field_requirements_on_one_field_combine_as_the_api_ands_them(text: str, matches: list[bool]) -> None:
    pods = [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "b"}, "spec": {}, "status": {"phase": "Pending"}},
        {"metadata": {"name": "c"}, "spec": {"hostNetwork": True}, "status": {"phase": "Failed"}},
        {"metadata": {"name": "d"}, "spec": {"nodeName": None}},
    ]
    match = matcher((), parse_field_selector(text, "Pod"))
    assert match is not None
    assert [match(p) for p in pods] == matches
    assert matches == [all(f.matches(p) for f in parse_field_selector(text, "Pod")) for p in pods]
