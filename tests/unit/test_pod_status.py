"""classify() against kubectl's STATUS column for every state in the status table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.kube.pod_status import PodState, classify
from tests import yaml_data

CASES: list[dict[str, Any]] = yaml_data.load(
    (Path(__file__).resolve().parents[2] / "tests/data/pod_states.yaml").read_text()
)
FIELDS = {"display": "display_status"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_pod_states(case: dict[str, Any]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ai"}, **case["pod"]}
    pod["metadata"] = {"name": "p", "namespace": "ai", **(case["pod"].get("metadata") or {})}
    state = classify(pod)
    assert isinstance(state, PodState)
    for key, expected in case["expect"].items():
        assert getattr(state, FIELDS.get(key, key)) == expected, (key, state)
    if "terminating" not in case["expect"]:
        assert state.terminating is False


def test_classify_does_not_mutate() -> None:
    case = next(c for c in CASES if c["id"] == "crashloop-oomkilled")
    before = yaml.safe_dump(case["pod"])
    classify(case["pod"])
    assert yaml.safe_dump(case["pod"]) == before


def test_every_reason_is_a_plain_word() -> None:
    # The status table in the runbooks is keyed on these; no "Init:" or "ExitCode:" prefixes.
    for case in CASES:
        reason = classify(case["pod"]).reason
        assert reason and ":" not in reason and not reason[0].isdigit(), (case["id"], reason)
