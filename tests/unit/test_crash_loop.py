"""The one crash-loop and readiness predicate, over every pod state of tests/data/pod_states.yaml.

``crash_looping`` is the kubelet's own word (a container waiting in CrashLoopBackOff, app or
init); ``keeps_failing`` also counts the moments between two back-offs (Error, OOMKilled, a failed
start) and restarts without readiness. The watch, the node-agent probe, the DaemonSet health and
the GPU health check all decide through these two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.kube.pod_status import classify, crash_loop_status, crash_looping, keeps_failing, pod_ready, running_ready
from tests import yaml_data

CASES: list[dict[str, Any]] = yaml_data.load(
    (Path(__file__).resolve().parents[1] / "data/pod_states.yaml").read_text()
)
CRASH_LOOPING = {"init-crashloop", "crashloop-oomkilled"}
KEEPS_FAILING = CRASH_LOOPING | {
    "init-failed-exit-code", "oomkilled-now", "create-container-error", "run-container-error", "error",
    "terminated-without-reason-signal",
}


def test_the_table_names_real_cases() -> None:
    assert {c["id"] for c in CASES} >= KEEPS_FAILING


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_crash_loop_predicates(case: dict[str, Any]) -> None:
    pod = case["pod"]
    assert crash_looping(pod) is (case["id"] in CRASH_LOOPING)
    assert keeps_failing(classify(pod)) is (case["id"] in KEEPS_FAILING)


def test_the_looping_container_is_the_one_quoted() -> None:
    pod = next(c["pod"] for c in CASES if c["id"] == "init-crashloop")
    looping = crash_loop_status(pod)
    assert looping is not None and (looping["name"], looping["restartCount"]) == ("fetch", 4)


def test_restarts_without_readiness_keep_failing_and_one_container_narrows_it() -> None:
    pod = next(c["pod"] for c in CASES if c["id"] == "running-not-ready")
    state = classify(pod)
    assert not keeps_failing(state, restarts=0)
    assert keeps_failing(state, restarts=3)
    assert keeps_failing(state, waiting="CrashLoopBackOff", restarts=0)


@pytest.mark.parametrize(
    ("status", "ready", "serving"),
    [
        ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}, True, True),
        ({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}, False, False),
        ({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"}]}, True, False),
        ({"phase": "Running", "conditions": "Ready"}, False, False),  # a hostile or pasted object
        ({"phase": "Running", "conditions": [None, "x", {"type": "Ready", "status": "True"}]}, True, True),
        ("Running", False, False),
        (None, False, False),
    ],
)
def test_readiness(status: Any, ready: bool, serving: bool) -> None:
    assert pod_ready({"status": status}) is ready
    assert running_ready({"status": status}) is serving
