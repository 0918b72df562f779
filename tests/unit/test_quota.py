"""ResourceQuota refusals as the API server words them, and who uses a quota."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kube.quota import (
    fmt_quantity,
    parse_quota_denial,
    parse_resource_list,
    pod_quota_usage,
    quota_lines,
    quota_selects,
    quota_users,
)


def _pod(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
         phase: str = "Running", **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": resources}], "nodeName": "n1", **spec},
        "status": {"phase": phase},
    }


def _quota(hard: dict[str, str], used: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-quota", "namespace": "ml"}, "spec": {"hard": hard, **spec},
            "status": {"hard": hard, "used": used}}


def test_exceeded_gpu_quota_as_the_apiserver_words_it() -> None:
    denial = parse_quota_denial(
        'Error creating: pods "llm-serve-7c9f6b5d8-x2x7q" is forbidden: exceeded quota: gpu-quota, '
        "requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4"
    )
    assert denial is not None
    assert (denial.kind, denial.quota, denial.pod) == ("exceeded", "gpu-quota", "llm-serve-7c9f6b5d8-x2x7q")
    assert denial.requested == {"requests.nvidia.com/gpu": "1"}
    assert denial.used == denial.limited == {"requests.nvidia.com/gpu": "4"}
    assert denial.describe() == "quota gpu-quota: requests.nvidia.com/gpu: asks 1, 4 of 4 used"


def test_exceeded_with_several_resources_and_combined_prefix() -> None:
    # ministryofjustice/cloud-platform#590, a ReplicaSet's FailedCreate event
    denial = parse_quota_denial(
        '(combined from similar events): Error creating: pods "allocation-manager-6597bc46dc-2wm8j" is forbidden: '
        "exceeded quota: namespace-quota, requested: limits.cpu=1,limits.memory=2Gi, used: limits.cpu=6,"
        "limits.memory=12Gi, limited: limits.cpu=6,limits.memory=12Gi"
    )
    assert denial is not None
    assert denial.resources == ["limits.cpu", "limits.memory"]
    assert denial.limited == {"limits.cpu": "6", "limits.memory": "12Gi"}


def test_old_capitalised_wording_and_statefulset_must_specify() -> None:
    old = parse_quota_denial(
        'replicationcontrollers "app-41" is forbidden: Exceeded quota: object-counts, requested: '
        "replicationcontrollers=1, used: replicationcontrollers=20, limited: replicationcontrollers=20"
    )
    assert old is not None and old.quota == "object-counts" and old.pod == ""
    must = parse_quota_denial(
        "create Pod fpl-es-master-0 in StatefulSet fpl-es-master failed error: pods \"fpl-es-master-0\" is "
        "forbidden: failed quota: fpl-quota: must specify requests.cpu,requests.memory"
    )
    assert must is not None
    assert (must.kind, must.quota, must.missing) == ("must_specify", "fpl-quota", ("requests.cpu", "requests.memory"))
    assert "requires every pod to state requests.cpu, requests.memory" in must.describe()
    unknown = parse_quota_denial('pods "tensorflow-3620546736-" is forbidden: status unknown for quota: quota')
    assert unknown is not None and unknown.kind == "status_unknown"


@pytest.mark.parametrize("text", [
    "", "exceeded quota", 'admission webhook "x" denied the request: no', "Error creating: pods is forbidden: quota",
])
def test_not_a_quota_refusal(text: str) -> None:
    assert parse_quota_denial(text) is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_no_text_crashes_the_parser(text: str) -> None:
    parse_quota_denial(text)
    parse_resource_list(text)


def test_usage_per_quota_resource() -> None:
    pod = _pod("a", requests={"cpu": "500m", "nvidia.com/gpu": "2"}, limits={"memory": "4Gi", "nvidia.com/gpu": "2"})
    assert pod_quota_usage(pod, "requests.nvidia.com/gpu") == 2
    assert pod_quota_usage(pod, "requests.cpu") == Decimal("0.5")
    assert pod_quota_usage(pod, "cpu") == Decimal("0.5")
    assert pod_quota_usage(pod, "requests.memory") == 4 * 2**30  # request defaults to the limit
    assert pod_quota_usage(pod, "limits.memory") == 4 * 2**30
    assert pod_quota_usage(pod, "limits.cpu") == 0
    assert pod_quota_usage(pod, "pods") == pod_quota_usage(pod, "count/pods") == 1


def test_users_are_live_pods_largest_first() -> None:
    quota = _quota({"requests.nvidia.com/gpu": "4"}, {"requests.nvidia.com/gpu": "4"})
    pods = [
        _pod("small", requests={"nvidia.com/gpu": "1"}),
        _pod("big", requests={"nvidia.com/gpu": "3"}),
        _pod("done", requests={"nvidia.com/gpu": "1"}, phase="Succeeded"),
        _pod("cpu", requests={"cpu": "1"}),
    ]
    users = quota_users(quota, "requests.nvidia.com/gpu", pods)
    assert [(u.name, u.amount) for u in users] == [("big", 3), ("small", 1)]


def test_lines_say_when_one_more_pod_overflows() -> None:
    quota = _quota({"requests.nvidia.com/gpu": "4", "pods": "20"}, {"requests.nvidia.com/gpu": "4", "pods": "5"})
    template = _pod("next", requests={"nvidia.com/gpu": "1"})
    lines = {line.resource: line for line in quota_lines(quota, template)}
    assert lines["requests.nvidia.com/gpu"].full and lines["requests.nvidia.com/gpu"].asks == 1
    assert not lines["pods"].full
    assert not any(line.full for line in quota_lines(quota))  # no template: nothing is asked


def test_scopes() -> None:
    terminating = _quota({"pods": "1"}, {}, scopes=["Terminating"])
    assert quota_selects(terminating, _pod("job", activeDeadlineSeconds=60))
    assert not quota_selects(terminating, _pod("svc"))
    by_priority = _quota({"pods": "1"}, {}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]})
    assert quota_selects(by_priority, _pod("p", priorityClassName="high"))
    assert not quota_selects(by_priority, _pod("p"))
    assert not quota_selects(_quota({}, {}, scopes=["BestEffort"]), _pod("p", requests={"cpu": "1"}))


def test_fmt_quantity() -> None:
    assert fmt_quantity("requests.memory", Decimal(2 * 2**30)) == "2Gi"
    assert fmt_quantity("requests.memory", Decimal(1536 * 2**20)) == "1.5Gi"
    assert fmt_quantity("requests.cpu", Decimal("0.5")) == "500m"
    assert fmt_quantity("requests.nvidia.com/gpu", Decimal(3)) == "3"
