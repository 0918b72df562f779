"""cluster-autoscaler and Karpenter events on a pending pod, as the projects word them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kube.autoscaler import (
    karpenter_shortfall,
    newest_refusal,
    node_group,
    parse_autoscaler_event,
    parse_cluster_autoscaler,
    parse_karpenter,
)

# aws/karpenter-provider-aws#5527 (Karpenter v0.33, two NodePools)
KARPENTER_5527 = (
    'Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"cpu":"185m","memory":"240Mi",'
    '"pods":"6"}, no instance type satisfied resources {"cpu":"185m","memory":"240Mi","nvidia.com/gpu":"1",'
    '"pods":"7"} and requirements gpu-type In [nvidia], karpenter.sh/nodepool In [gpu], '
    "node.kubernetes.io/instance-type In [g5.12xlarge g5.16xlarge g5.24xlarge g5.4xlarge g5.8xlarge] (no instance "
    "type which met the scheduling requirements and had enough resources, had a required offering); incompatible "
    'with nodepool "general-purpose", daemonset overhead={"cpu":"155m","memory":"120Mi","pods":"4"}, no instance '
    'type satisfied resources {"cpu":"155m","memory":"120Mi","nvidia.com/gpu":"1","pods":"5"} and requirements '
    "karpenter.k8s.aws/instance-category In [c m r], karpenter.sh/nodepool In [general-purpose] (no instance type "
    "which had enough resources and the required offering met the scheduling requirements)"
)


def _event(reason: str, message: str, when: str, component: str = "cluster-autoscaler") -> dict[str, Any]:
    return {"reason": reason, "message": message, "lastTimestamp": when, "source": {"component": component}}


def test_not_trigger_scale_up_counts_node_groups() -> None:
    refusal = parse_cluster_autoscaler(
        "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, "
        "1 max node group size reached"
    )
    assert refusal is not None and not refusal.wouldnt_fit
    assert [(r.count, r.category) for r in refusal.reasons] == [(2, "node_selector"), (1, "max_size")]
    assert refusal.groups_considered == 3
    assert refusal.reasons[1].skipped and not refusal.reasons[0].skipped
    assert refusal.lines() == [
        "2 node groups: node(s) didn't match Pod's node affinity/selector",
        "1 node group: max node group size reached",
    ]


def test_old_wouldnt_fit_wording_with_and_without_reasons() -> None:
    # kubernetes/autoscaler#3869 (CA 1.18.1) and #929 (CA 1.1.2)
    refusal = parse_cluster_autoscaler(
        "pod didn't trigger scale-up (it wouldn't fit if a new node is added): 2 Insufficient nvidia.com/gpu, "
        "1 max node group size reached"
    )
    assert refusal is not None and refusal.wouldnt_fit
    assert [(r.count, r.category, r.resource) for r in refusal.reasons] == [
        (2, "insufficient_gpu", "nvidia.com/gpu"), (1, "max_size", None)]
    bare = parse_cluster_autoscaler("pod didn't trigger scale-up (it wouldn't fit if a new node is added)")
    assert bare is not None and bare.wouldnt_fit and bare.reasons == []
    assert parse_cluster_autoscaler("pod triggered scale-up: [{gpu 0->1 (max: 3)}]") is None


def test_taint_and_backoff_reasons() -> None:
    refusal = parse_cluster_autoscaler(
        "pod didn't trigger scale-up: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
        "1 not ready for scale-up, 1 max cluster cpu limit reached"
    )
    assert refusal is not None
    assert [r.category for r in refusal.reasons] == ["untolerated_taint", "backoff", "cluster_limit"]


def test_karpenter_per_nodepool() -> None:
    refusal = parse_karpenter(KARPENTER_5527)
    assert refusal is not None and refusal.source == "karpenter"
    assert [(r.group, r.category) for r in refusal.reasons] == [
        ("gpu", "no_instance_type"), ("general-purpose", "no_instance_type")]
    gpu = refusal.reasons[0]
    assert gpu.resources == {"cpu": "185m", "memory": "240Mi", "nvidia.com/gpu": "1", "pods": "7"}
    assert gpu.requirements.startswith("gpu-type In [nvidia]")
    assert gpu.why.startswith("no instance type which met the scheduling requirements")
    assert refusal.lines()[1].startswith('NodePool "general-purpose": no instance type satisfied')


def test_karpenter_shortfall_reads_the_verdict() -> None:
    refusal = parse_karpenter(KARPENTER_5527)
    assert refusal is not None
    assert [r.shortfall for r in refusal.reasons] == [["offering"], ["requirements"]]
    assert karpenter_shortfall("no instance type met all requirements") == ["requirements"]
    assert karpenter_shortfall("no instance type met the scheduling requirements or had enough resources") == [
        "requirements", "resources"]
    assert karpenter_shortfall(
        "no instance type which met the scheduling requirements and had a required offering had enough resources"
    ) == ["resources"]
    assert karpenter_shortfall("") == []


def test_karpenter_incompatible_requirements_limits_and_provisioner() -> None:
    refusal = parse_karpenter(
        'Failed to schedule pod, incompatible with provisioner "default", daemonset overhead={"cpu":"455m","memory":'
        '"376Mi","pods":"4"}, incompatible requirements, label "name" does not have known values (typo of '
        '"karpenter.k8s.aws/instance-gpu-name"?); all available instance types exceed limits for nodepool: "gpu"'
    )
    assert refusal is not None
    assert [(r.group, r.category) for r in refusal.reasons] == [("default", "requirements"), ("gpu", "limits")]
    assert refusal.reasons[1].skipped
    assert parse_karpenter("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.") is None


def test_event_dispatch_and_progress_makes_a_refusal_stale() -> None:
    ca = _event("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached",
                "2026-05-08T09:00:00Z")
    karpenter = _event("FailedScheduling", KARPENTER_5527, "2026-05-08T09:05:00Z", component="karpenter")
    scheduler = _event("FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
                       "2026-05-08T09:10:00Z", component="default-scheduler")
    assert parse_autoscaler_event(scheduler) is None
    assert parse_autoscaler_event(ca) is not None
    found = newest_refusal([ca, karpenter, scheduler])
    assert found is not None and found[0].source == "karpenter"
    nominated = _event("Nominated", "Pod should schedule on: nodeclaim/gpu-x2k9p", "2026-05-08T09:06:00Z",
                       component="karpenter")
    assert newest_refusal([ca, karpenter, nominated]) is None
    assert newest_refusal([]) is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_no_text_crashes_the_parsers(text: str) -> None:
    parse_cluster_autoscaler("pod didn't trigger scale-up: " + text)
    parse_karpenter("Failed to schedule pod, " + text)
    parse_autoscaler_event({"reason": "NotTriggerScaleUp", "message": text})


def test_node_group_labels() -> None:
    assert node_group({"metadata": {"labels": {"eks.amazonaws.com/nodegroup": "gpu-ng"}}}) == "gpu-ng"
    assert node_group({"metadata": {"labels": {"cloud.google.com/gke-nodepool": "l4-pool"}}}) == "l4-pool"
    assert node_group({"metadata": {"labels": {"karpenter.sh/nodepool": "gpu"}}}) == "gpu"
    assert node_group({"metadata": {}}) is None
