"""Capacity, request-shape and GPU-holder checks on hand-built facts."""

from __future__ import annotations

from bot.engine.check import ASIDE
from tests.facts import node, only, pod, run, slim

QCORE = "tke.cloud.tencent.com/qgpu-core"


# ------------------------------------------------------------------ capacity.exceeds


def test_exceeds_more_than_the_largest_usable_node() -> None:
    d = only("capacity.exceeds", pod=pod(gpu=16), nodes=[node("a", gpu=8), node("b", gpu=4)])
    assert d.code == "REQUEST_EXCEEDS_NODE"
    assert d.params == {"pod": "ml/p", "resource": "nvidia.com/gpu", "requested": "16", "node": "a",
                        "value": "8", "count": 2}


def test_exceeds_silent_when_a_node_is_big_enough_or_nobody_offers_it() -> None:
    assert run("capacity.exceeds", pod=pod(gpu=8), nodes=[node("a", gpu=8)]) == []
    assert run("capacity.exceeds", pod=pod(gpu=2), nodes=[node("cpu", gpu=None)]) == []
    assert run("capacity.exceeds", pod=pod(gpu=None), nodes=[node("a")]) == []


def test_exceeds_only_nodes_the_selector_admits_count() -> None:
    p = pod(gpu=8, spec={"nodeSelector": {"pool": "small"}})
    d = only("capacity.exceeds", pod=p, nodes=[node("big", gpu=8), node("s", gpu=4, labels={"pool": "small"})])
    assert d.params["node"] == "s" and d.params["value"] == "4"


def test_exceeds_counts_tainted_nodes_only_when_the_pod_tolerates_no_node() -> None:
    taint = {"key": "pool", "value": "big", "effect": "NoSchedule"}
    nodes = [node("big", gpu=8, taints=[taint]), node("small", gpu=4)]
    # "small" is tolerated, so the tainted "big" is not a node it may use: 6 never fit on 4
    d = only("capacity.exceeds", pod=pod(gpu=6), nodes=nodes)
    assert (d.params["node"], d.params["value"], d.params["count"]) == ("small", "4", 1)
    # every node tainted: the taint is its own finding, and the sizes are those of all of them
    both = [node("big", gpu=8, taints=[taint]), node("small", gpu=4, taints=[taint])]
    assert run("capacity.exceeds", pod=pod(gpu=6), nodes=both) == []
    # only a CPU node tolerated: no node it may use offers the GPU at all (not this finding's case)
    gpu_tainted = [node("big", gpu=8, taints=[taint]), node("small", gpu=4, taints=[taint]), node("cpu", gpu=None)]
    assert run("capacity.exceeds", pod=pod(gpu=16), nodes=gpu_tainted) == []


def test_exceeds_uses_every_node_when_the_selector_admits_none() -> None:
    p = pod(gpu=16, spec={"nodeSelector": {"pool": "gone"}})  # the mismatch is its own finding
    d = only("capacity.exceeds", pod=p, nodes=[node("a", gpu=8), node("b", gpu=4)])
    assert (d.params["node"], d.params["count"]) == ("a", 2)


# ------------------------------------------------------------------ capacity.gpu


def test_capacity_exhausted_when_no_candidate_has_enough_free() -> None:
    holders = {"a": [slim("x", "a", gpu=8)], "b": [slim("y", "b", gpu=7)]}
    d = only("capacity.gpu", pod=pod(gpu=2), nodes=[node("a"), node("b")], node_pods=holders)
    assert d.code == "CAPACITY_EXHAUSTED" and d.params == {"pod": "ml/p", "resource": "nvidia.com/gpu"}
    assert "a: nvidia.com/gpu allocatable 8, requested 8, free 0, pod asks 2" in d.evidence


def test_capacity_fits_somewhere_or_finished_pods_free_their_cards() -> None:
    assert run("capacity.gpu", pod=pod(), nodes=[node("a")], node_pods={"a": [slim("x", "a", gpu=7)]}) == []
    done = {"a": [slim("x", "a", gpu=8, phase="Succeeded")]}
    assert run("capacity.gpu", pod=pod(), nodes=[node("a")], node_pods=done) == []


def test_capacity_nothing_for_a_pod_without_gpu_or_without_candidates() -> None:
    assert run("capacity.gpu", pod=pod(gpu=None), nodes=[node("a")]) == []
    assert run("capacity.gpu", pod=pod(), nodes=[node("cpu", gpu=None)]) == []


def test_capacity_counts_only_nodes_the_pod_may_land_on() -> None:
    """A cordoned node or one whose taint the pod does not tolerate is not a node it could use:
    full, it is not in the table; with room, it does not make the pod fit; and where no node is
    left, the cordon or taint finding says why it waits, not this one."""
    full = {"a": [slim("x", "a", gpu=8)], "b": [slim("y", "b", gpu=8)]}
    d = only("capacity.gpu", pod=pod(), nodes=[node("a"), node("b", unschedulable=True)], node_pods=full)
    assert [line.split(":")[0] for line in d.evidence if "allocatable" in line] == ["a"]
    taint = {"key": "pool", "value": "infer", "effect": "NoSchedule"}
    room = {"a": [slim("x", "a", gpu=8)]}
    assert only("capacity.gpu", pod=pod(), nodes=[node("a"), node("b", taints=[taint])], node_pods=room)
    assert run("capacity.gpu", pod=pod(), nodes=[node("a", unschedulable=True)], node_pods=room) == []


# ------------------------------------------------------------------ terminating.holders


def test_terminating_holders_are_the_cause_for_a_waiting_pod() -> None:
    holders = {"a": [slim("old", "a", gpu=8, deleting="2026-01-01T00:00:00Z"), slim("live", "a")]}
    d = only("terminating.holders", pod=pod(), node_pods=holders, nodes=[node("a", gpu=8)])
    assert d.code == "TERMINATING_HOLDS_GPU" and d.role == "cause"
    assert d.params["holders"] == [{"namespace": "ml", "name": "old", "ref": "ml/old"}]
    assert d.params["count"] == 1 and d.params["node"] == "a"


def test_terminating_holders_whose_release_would_not_fit_the_pod_are_aside() -> None:
    """One card held where the pod needs eight and seven stay taken: reported, not its cause;
    the same where the node does not offer what the pod asks, or its object was not read."""
    holders = {"a": [slim("old", "a", gpu=1, deleting="t"), slim("live", "a", gpu=7)]}
    d = only("terminating.holders", pod=pod(gpu=8), node_pods=holders, nodes=[node("a", gpu=8)])
    assert d.role == ASIDE
    assert only("terminating.holders", pod=pod(gpu=1), node_pods=holders, nodes=[node("a", gpu=8)]).role == "cause"
    assert only("terminating.holders", pod=pod(gpu=1, resource=QCORE), node_pods=holders,
                nodes=[node("a", gpu=8)]).role == ASIDE
    assert only("terminating.holders", pod=pod(gpu=1), node_pods=holders, nodes=[]).role == ASIDE


def test_terminating_holders_on_a_node_the_pod_may_not_use_are_aside() -> None:
    """Eight cards held on a node whose release would fit the pod, but where the pod may not land:
    its selector excludes the node, the node's taint is not tolerated, or it is cordoned (a drain).
    Where it tolerates the taint (a cordon's included) or its selector names the node, a cause."""
    holders = {"a": [slim("old", "a", gpu=8, deleting="t")]}
    taint = {"key": "pool", "value": "train", "effect": "NoSchedule"}
    tolerate = {"tolerations": [{"key": "pool", "operator": "Equal", "value": "train", "effect": "NoSchedule"}]}
    cordon = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}

    def role(p: dict[str, object], n: dict[str, object]) -> str:
        return only("terminating.holders", pod=p, node_pods=holders, nodes=[n]).role

    assert role(pod(gpu=8, spec={"nodeSelector": {"pool": "infer"}}), node("a", gpu=8)) == ASIDE
    assert role(pod(gpu=8, spec={"nodeSelector": {"pool": "infer"}}),
                node("a", gpu=8, labels={"pool": "infer"})) == "cause"
    assert role(pod(gpu=8), node("a", gpu=8, taints=[taint])) == ASIDE
    assert role(pod(gpu=8, spec=tolerate), node("a", gpu=8, taints=[taint])) == "cause"
    assert role(pod(gpu=8), node("a", gpu=8, unschedulable=True)) == ASIDE
    assert role(pod(gpu=8, spec=cordon), node("a", gpu=8, unschedulable=True)) == "cause"


def test_terminating_holders_in_a_node_view_have_no_role() -> None:
    holders = {"a": [slim("old", "a", deleting="t")], "b": [slim("o2", "b", deleting="t")]}
    found = run("terminating.holders", command="node-status", node_pods=holders)
    assert [(d.params["node"], d.role) for d in found] == [("a", ""), ("b", "")]


def test_terminating_without_gpu_or_already_finished_is_not_a_holder() -> None:
    pods = {"a": [slim("cpu", "a", gpu=0, deleting="t"), slim("done", "a", deleting="t", phase="Failed")]}
    assert run("terminating.holders", pod=pod(), node_pods=pods) == []


def test_terminating_lists_at_most_three_holders_for_the_buttons() -> None:
    pods = {"a": [slim(f"h{i}", "a", deleting="t") for i in range(6)]}
    d = only("terminating.holders", pod=pod(), node_pods=pods)
    assert d.params["count"] == 6 and len(d.params["holders"]) == 3


# ------------------------------------------------------------------ spec.gpu_request


def test_no_gpu_request_from_a_cuda_image() -> None:
    p = pod(gpu=None, image="nvidia/cuda:12.4.0-runtime-ubuntu22.04")
    d = only("spec.gpu_request", pod=p, nodes=[node("a")])
    assert d.code == "SPEC_NO_GPU_REQUEST" and d.params == {"pod": "ml/p", "container": "c"} and d.role == ""


def test_no_gpu_request_is_the_cause_behind_a_gpu_taint() -> None:
    p = pod(gpu=None, image="nvidia/cuda:12.4.0-runtime-ubuntu22.04")
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    d = only("spec.gpu_request", pod=p, nodes=[node("a", taints=[taint])])
    assert d.role == "cause"


def test_no_gpu_request_silent_for_a_gpu_pod_or_a_plain_cpu_pod() -> None:
    assert run("spec.gpu_request", pod=pod(image="nvidia/cuda:12"), nodes=[node("a")]) == []
    assert run("spec.gpu_request", pod=pod(gpu=None, image="nginx:1.27"), nodes=[node("a")]) == []


# ------------------------------------------------------------------ spec.resources


def test_spec_resources_mixed_and_zero_cpu() -> None:
    mixed = pod(limits={"nvidia.com/gpu": "1", QCORE: "50"})
    assert "SPEC_MIXED_GPU_RESOURCES" in [d.code for d in run("spec.resources", pod=mixed)]
    zero = pod(limits={"nvidia.com/gpu": "1", "cpu": "0"})
    d = only("spec.resources", pod=zero)
    assert d.code == "SPEC_ZERO_CPU_MEMORY" and d.params["container"] == "c"


def test_spec_resources_invalid_qgpu_and_a_sound_request() -> None:
    assert "SPEC_QGPU_INVALID" in [d.code for d in run("spec.resources", pod=pod(limits={QCORE: "150"}))]
    assert run("spec.resources", pod=pod(limits={"nvidia.com/gpu": "1", "cpu": "4"})) == []
    assert run("spec.resources", pod=None, kind="Pod", name="gone") == []


# ------------------------------------------------------------------ spec.whole_card_shared


def test_whole_card_on_nodes_full_of_shared_qgpu_pods() -> None:
    n = node("q", resource=QCORE, gpu=400)
    shared = {"q": [slim("s1", "q", resource=QCORE, gpu=50)]}
    d = only("spec.whole_card_shared", pod=pod(resource=QCORE, gpu=100), nodes=[n], node_pods=shared)
    assert d.code == "SPEC_WHOLE_CARD_SHARED" and d.params == {"pod": "ml/p", "requested": "100", "nodes": "q"}


def test_whole_card_silent_for_a_share_or_a_node_without_shared_pods() -> None:
    n = node("q", resource=QCORE, gpu=400)
    shared = {"q": [slim("s1", "q", resource=QCORE, gpu=50)]}
    assert run("spec.whole_card_shared", pod=pod(resource=QCORE, gpu=50), nodes=[n], node_pods=shared) == []
    assert run("spec.whole_card_shared", pod=pod(resource=QCORE, gpu=100), nodes=[n]) == []
