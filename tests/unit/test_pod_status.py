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


def test_a_pod_object_is_classified_once_per_resource_version() -> None:
    from bot.kube.pod_status import classify

    pod: dict = {"metadata": {"name": "p", "uid": "u-1", "resourceVersion": "7"},
                 "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
                 "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                            "containerStatuses": [{"name": "c", "ready": True, "state": {"running": {}}}]}}
    first = classify(pod)
    assert classify(pod) is first and first.ready
    # the watch hands over a newer version: a changed object has a new resourceVersion
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod["metadata"]["resourceVersion"] = "8"
    assert not classify(pod).ready
    twin = {**pod, "metadata": dict(pod["metadata"])}  # equal content, another object: worked out anew
    assert classify(twin) == classify(pod) and classify(twin) is not classify(pod)
    pod["metadata"].pop("resourceVersion")  # hand-made objects without one are never remembered
    assert classify(pod) is not classify(pod)
