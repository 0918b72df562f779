"""Command parsing and name validation: every bad input is a one-line UsageError, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.commands import Invocation, parse_invocation
from bot.errors import UsageError
from bot.names import validate_name, validate_namespace


def test_pod_and_workload_targets() -> None:
    assert parse_invocation(["why-pending", "gpu-demo-1", "-n", "ai"]) == Invocation(
        command="why-pending", kind="Pod", name="gpu-demo-1", namespace="ai"
    )
    inv = parse_invocation(["why-pending", "deploy/trainer", "--namespace=team-a", "--cluster", "prod"])
    assert (inv.kind, inv.name, inv.namespace, inv.cluster) == ("Deployment", "trainer", "team-a", "prod")
    assert parse_invocation(["why-pending", "sts/bert"]).kind == "StatefulSet"
    assert parse_invocation(["why-pending", "job/x"]).kind == "Job"
    assert parse_invocation(["node-status", "n1", "n2"]).nodes == ("n1", "n2")
    assert parse_invocation(["runbook", "guide-pod-triage"]).topic == "guide-pod-triage"
    assert parse_invocation(["why-pending", "p"]).namespace == "default"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["rm -rf /"],
        ["why-pending"],
        ["why-pending", "a", "b"],
        ["why-pending", "pod;reboot"],
        ["why-pending", "$(id)"],
        ["why-pending", "`id`"],
        ["why-pending", "p", "-n", "../etc"],
        ["why-pending", "p", "-n"],
        ["why-pending", "Pod-Upper"],
        ["why-pending", "ünïcødé"],
        ["why-pending", ""],
        ["why-pending", "x" * 10_000],
        ["why-pending", "cronjob/x"],
        ["nvml", "deploy/x"],
        ["node-status", "-n", "x"],
        ["node-status", "node|cat"],
        ["why-pending", "p", "--force"],
        ["runbook", "a", "b"],
        ["help", "me"],
    ],
)
def test_bad_input_is_one_line_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        parse_invocation(argv)
    message = err.value.user_message
    assert message and "\n" not in message and len(message) < 400


@given(st.lists(st.text(max_size=300), max_size=6))
def test_parser_never_crashes(argv: list[str]) -> None:
    try:
        inv = parse_invocation(argv)
    except UsageError as err:
        assert "\n" not in err.user_message
        return
    # Whatever is accepted is a valid Kubernetes name: safe as an API parameter.
    for name in (inv.name, *inv.nodes):
        if name:
            validate_name(name)
    validate_namespace(inv.namespace)


@given(st.text(max_size=300))
def test_accepted_names_contain_no_shell_metacharacters(text: str) -> None:
    try:
        name = validate_name(text)
    except UsageError:
        return
    assert not set(name) & set(" ;|&$`'\"\\<>(){}[]*?!#~\n\t")
