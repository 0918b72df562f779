"""Toleration matching with the scheduler's semantics, and the toleration the bot suggests."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.kube.taints import (
    UNSCHEDULABLE_TAINT_KEY,
    node_taints,
    suggest_toleration,
    taint_str,
    tolerates,
    toleration_yaml,
    untolerated_taints,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
MASTER_TAINT = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "toleration,taint,expected",
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True),  # empty effect = all effects
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
        (
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
            GPU_TAINT,
            True,
        ),
        ({"key": "nvidia.com/gpu", "value": "true"}, GPU_TAINT, True),  # operator defaults to Equal
        ({"key": "nvidia.com/gpu", "value": "false"}, GPU_TAINT, False),
        ({"key": "nvidia.com/gpu"}, GPU_TAINT, False),  # Equal with no value needs an empty taint value
        ({"key": "node-role.kubernetes.io/master"}, MASTER_TAINT, True),
        ({"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": ""}, MASTER_TAINT, True),
        ({"operator": "Exists"}, GPU_TAINT, True),  # empty key + Exists tolerates everything
        ({"operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
        ({"key": "other", "operator": "Exists"}, GPU_TAINT, False),
        ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, GPU_TAINT, False),  # unknown operator
    ],
)
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def _pod(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c"}], "tolerations": list(tolerations)}}


def _node(*taints: dict[str, Any], unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n1"}, "spec": spec}


def test_untolerated_lists_only_blocking_effects() -> None:
    prefer = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}
    evict = {"key": "maintenance", "effect": "NoExecute"}
    node = _node(GPU_TAINT, prefer, evict)
    assert untolerated_taints(_pod(), node) == [GPU_TAINT, evict]
    assert untolerated_taints(_pod({"key": "nvidia.com/gpu", "operator": "Exists"}), node) == [evict]
    assert untolerated_taints(_pod({"operator": "Exists"}), node) == []


def test_node_without_taints_blocks_nothing() -> None:
    assert untolerated_taints(_pod(), {"metadata": {"name": "n"}}) == []
    assert untolerated_taints({}, _node()) == []


def test_cordoned_node_adds_implicit_unschedulable_taint() -> None:
    node = _node(unschedulable=True)
    blocked = untolerated_taints(_pod(), node)
    assert blocked == [{"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}]
    assert untolerated_taints(_pod(), node, include_unschedulable=False) == []
    # DaemonSet pods tolerate it, so they still land on a cordoned node.
    daemon = _pod({"key": UNSCHEDULABLE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})
    assert untolerated_taints(daemon, node) == []


def test_implicit_taint_not_duplicated_when_controller_added_it() -> None:
    node = _node(
        {"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule", "timeAdded": "2026-05-08T06:00:00Z"},
        unschedulable=True,
    )
    assert len(node_taints(node)) == 1


def test_node_taints_does_not_mutate_input() -> None:
    node = _node(GPU_TAINT, unschedulable=True)
    node_taints(node)
    assert node["spec"]["taints"] == [GPU_TAINT]


def test_suggested_toleration_tolerates_the_taint() -> None:
    for taint in (GPU_TAINT, MASTER_TAINT, {"key": "dedicated", "value": "ml", "effect": "NoExecute"}):
        for exact in (False, True):
            suggestion = suggest_toleration(taint, exact=exact)
            assert tolerates(suggestion, taint)
    assert suggest_toleration(GPU_TAINT) == {
        "key": "nvidia.com/gpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    assert suggest_toleration(GPU_TAINT, exact=True) == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }


def test_toleration_yaml_matches_field_notes_and_round_trips() -> None:
    text = toleration_yaml(GPU_TAINT)
    assert text == 'tolerations:\n- key: "nvidia.com/gpu"\n  operator: "Exists"\n  effect: "NoSchedule"\n'
    exact = yaml.safe_load(toleration_yaml(GPU_TAINT, exact=True))
    # "true" stays a string: YAML would otherwise read it as a boolean.
    assert exact == {
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ]
    }
    assert tolerates(exact["tolerations"][0], GPU_TAINT)


def test_taint_str_like_kubectl() -> None:
    assert taint_str(GPU_TAINT) == "nvidia.com/gpu=true:NoSchedule"
    assert taint_str(MASTER_TAINT) == "node-role.kubernetes.io/master:NoSchedule"
