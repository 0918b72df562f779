"""nodeSelector and required node affinity, evaluated against node labels with reasons in words."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.affinity import describe_selection, matching_nodes, node_matches, reaches_resource_fit, selects_nodes


def _node(name: str = "gpu-v100-1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def _pod(selector: dict[str, str] | None = None, terms: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return {"spec": spec}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expr["values"] = list(values)
    return expr


def test_no_rules_match_every_node() -> None:
    assert node_matches(_pod(), _node()).ok
    assert node_matches({}, {}).ok
    assert not selects_nodes(_pod()) and not selects_nodes({}) and not selects_nodes(_pod({}))


def test_any_rule_selects_even_one_that_matches_no_node() -> None:
    assert selects_nodes(_pod({"gpu-type": "a100"}))
    assert selects_nodes(_pod(terms=[]))  # no terms at all: matches no node
    assert not node_matches(_pod(terms=[]), _node()).ok


def test_node_selector_value_mismatch_and_missing_label() -> None:
    pod = _pod({"gpu-type": "a100", "accelerator": "nvidia"})
    result = node_matches(pod, _node(**{"gpu-type": "v100"}))
    assert not result.ok
    assert result.mismatches == [
        "nodeSelector gpu-type=a100 vs node label gpu-type=v100",
        "nodeSelector accelerator=nvidia: label accelerator missing",
    ]
    assert node_matches(pod, _node(**{"gpu-type": "a100", "accelerator": "nvidia"})).ok


def test_node_selector_compares_yaml_scalars_as_strings() -> None:
    # `qgpu-device-enable: enable` and `x: true` read from YAML may arrive as bool/str mixes.
    assert node_matches(_pod({"x": True}), _node(x="True")).ok  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "expr,labels,ok",
    [
        (_expr("gpu", "In", "a100", "h100"), {"gpu": "a100"}, True),
        (_expr("gpu", "In", "a100", "h100"), {"gpu": "v100"}, False),
        (_expr("gpu", "In", "a100"), {}, False),
        (_expr("gpu", "NotIn", "v100"), {"gpu": "a100"}, True),
        (_expr("gpu", "NotIn", "v100"), {}, True),  # NotIn holds when the label is absent
        (_expr("gpu", "NotIn", "v100"), {"gpu": "v100"}, False),
        (_expr("gpu", "Exists"), {"gpu": ""}, True),
        (_expr("gpu", "Exists"), {}, False),
        (_expr("gpu", "DoesNotExist"), {}, True),
        (_expr("gpu", "DoesNotExist"), {"gpu": "x"}, False),
        (_expr("mem", "Gt", "40"), {"mem": "80"}, True),
        (_expr("mem", "Gt", "80"), {"mem": "80"}, False),
        (_expr("mem", "Lt", "80"), {"mem": "40"}, True),
        (_expr("mem", "Lt", "80"), {"mem": "eighty"}, False),  # a non-integer label fails
        (_expr("mem", "Gt", "40"), {}, False),
        (_expr("mem", "Gt", "forty"), {"mem": "80"}, False),  # invalid requirement matches nothing
        (_expr("gpu", "Near", "a100"), {"gpu": "a100"}, False),
    ],
)
def test_operators(expr: dict[str, Any], labels: dict[str, str], ok: bool) -> None:
    node = {"metadata": {"name": "n", "labels": labels}}
    assert node_matches(_pod(terms=[{"matchExpressions": [expr]}]), node).ok is ok


def test_expressions_are_anded_and_explained() -> None:
    pod = _pod(
        terms=[{"matchExpressions": [_expr("gpu", "In", "a100", "h100"), _expr("accelerator", "Exists")]}]
    )
    result = node_matches(pod, _node(gpu="v100"))
    assert result.mismatches == [
        "node affinity: gpu In [a100, h100]: node label gpu=v100",
        "node affinity: accelerator Exists: label accelerator missing",
    ]
    assert not node_matches(pod, _node(gpu="a100")).ok
    assert node_matches(pod, _node(gpu="a100", accelerator="nvidia")).ok


def test_terms_are_ored() -> None:
    pod = _pod(
        terms=[
            {"matchExpressions": [_expr("gpu", "In", "a100")]},
            {"matchExpressions": [_expr("gpu", "In", "v100")]},
        ]
    )
    assert node_matches(pod, _node(gpu="v100")).ok
    result = node_matches(pod, _node(gpu="t4"))
    assert result.mismatches == [
        "node affinity term 1: gpu In [a100]: node label gpu=t4",
        "node affinity term 2: gpu In [v100]: node label gpu=t4",
    ]


def test_empty_terms_match_nothing() -> None:
    assert not node_matches(_pod(terms=[]), _node()).ok
    assert not node_matches(_pod(terms=[{}]), _node()).ok
    assert node_matches(_pod(terms=[{}, {"matchExpressions": [_expr("gpu", "Exists")]}]), _node(gpu="x")).ok


def test_match_fields_on_node_name() -> None:
    pod = _pod(terms=[{"matchFields": [_expr("metadata.name", "In", "tcs-10-29-25-5")]}])
    assert node_matches(pod, _node("tcs-10-29-25-5")).ok
    result = node_matches(pod, _node("tcs-10-29-25-6"))
    assert result.mismatches == ["node affinity: metadata.name In [tcs-10-29-25-5]: node name tcs-10-29-25-6"]
    not_in = _pod(terms=[{"matchFields": [_expr("metadata.name", "NotIn", "tcs-10-29-25-5")]}])
    assert node_matches(not_in, _node("tcs-10-29-25-6")).ok
    bad = _pod(terms=[{"matchFields": [_expr("metadata.uid", "In", "x")]}])
    assert not node_matches(bad, _node()).ok


def test_selector_and_affinity_both_apply() -> None:
    pod = _pod({"pool": "gpu"}, [{"matchExpressions": [_expr("gpu", "Exists")]}])
    assert not node_matches(pod, _node(pool="gpu")).ok
    assert not node_matches(pod, _node(gpu="a100")).ok
    assert node_matches(pod, _node(pool="gpu", gpu="a100")).ok


def test_preferred_affinity_is_ignored() -> None:
    pod = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchExpressions": [_expr("gpu", "In", "h100")]}}
                    ]
                }
            }
        }
    }
    assert node_matches(pod, _node(gpu="t4")).ok


def test_describe_selection_and_matching_nodes() -> None:
    pod = _pod(
        {"gpu-type": "a100"},
        [{"matchExpressions": [_expr("zone", "In", "a", "b"), _expr("spot", "DoesNotExist")]}],
    )
    assert describe_selection(pod) == [
        "nodeSelector gpu-type=a100",
        "required node affinity: zone In [a, b] AND spot DoesNotExist",
    ]
    nodes = [
        _node("n1", **{"gpu-type": "a100", "zone": "a"}),
        _node("n2", **{"gpu-type": "v100", "zone": "a"}),
        _node("n3", **{"gpu-type": "a100", "zone": "a", "spot": "1"}),
    ]
    assert matching_nodes(pod, nodes) == ["n1"]


def test_reaches_resource_fit_only_past_taints_cordon_and_selector() -> None:
    pod = {"spec": {"nodeSelector": {"pool": "gpu"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}
    gpu = {"metadata": {"labels": {"pool": "gpu"}},
           "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}
    assert reaches_resource_fit(pod, gpu)
    assert not reaches_resource_fit(pod, {"metadata": {"labels": {"pool": "cpu"}}, "spec": {}})
    assert not reaches_resource_fit(pod, {**gpu, "spec": {**gpu["spec"], "unschedulable": True}})
    tainted = {"metadata": {"labels": {"pool": "gpu"}}, "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}}
    assert not reaches_resource_fit(pod, tainted)
