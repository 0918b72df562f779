"""``per_question`` and ``per_cluster``: a derivation several checks ask for is worked out once per
question, or once for every diagnosis of one answer where it rests on the cluster-wide facts alone."""

from __future__ import annotations

from typing import Any

from bot.engine.checks._plugin import admitted_nodes, eligible_nodes
from bot.engine.facts import Facts, per_cluster, per_question
from tests.facts import facts, node, pod

calls: list[str] = []


@per_question
def counted(f: Facts, pod: dict[str, Any]) -> list[str]:
    calls.append(pod["metadata"]["name"])
    return sorted(f.nodes)


def test_asked_twice_for_one_pod_it_is_worked_out_once() -> None:
    calls.clear()
    p, other = pod("p"), pod("q")
    f = facts(pod=p, nodes=[node("a"), node("b")])
    assert counted(f, p) is counted(f, p)
    assert counted(f, other) == ["a", "b"]
    # an equal but distinct pod is another question: identity, not equality, is the key
    assert counted(f, pod("p")) == ["a", "b"]
    assert calls == ["p", "q", "p"]


def test_a_fact_put_afterwards_is_seen() -> None:
    calls.clear()
    p = pod("p")
    f = facts(pod=p, nodes=[node("a")])
    assert counted(f, p) == ["a"]
    f.put("nodes", {"a": node("a"), "b": node("b")})
    assert counted(f, p) == ["a", "b"]
    assert calls == ["p", "p"]


def test_each_question_has_its_own() -> None:
    p = pod("p")
    assert counted(facts(pod=p, nodes=[node("a")]), p) == ["a"]
    assert counted(facts(pod=p, nodes=[node("b")]), p) == ["b"]


def test_the_plugin_checks_node_scope_is_the_pods_selection_of_ready_gpu_nodes() -> None:
    p = pod("p", spec={"nodeSelector": {"pool": "a100"}})
    nodes = [
        node("sel", labels={"pool": "a100"}),
        node("other", labels={"pool": "h100"}),
        node("down", labels={"pool": "a100"}, ready=False),
        node("cpu", gpu=None, labels={"pool": "a100"}),
    ]
    f = facts(pod=p, nodes=nodes)
    assert admitted_nodes(f, p) == ["sel", "down", "cpu"]
    assert eligible_nodes(f, p) == ["sel"]
    assert eligible_nodes(f, p) is eligible_nodes(f, p)


cluster_calls: list[str] = []


@per_cluster("nodes")
def node_names(f: Facts, prefix: str) -> list[str]:
    cluster_calls.append(prefix)
    return sorted(n for n in f.nodes if n.startswith(prefix))


def test_what_rests_on_the_nodes_alone_is_worked_out_once_for_every_diagnosis_sharing_them() -> None:
    """``gpubot pending``'s diagnoses share the cluster-wide facts (``Facts.share``): a value worked
    out of those alone is worked out by the first that asks, whatever pod each is about."""
    cluster_calls.clear()
    base = facts("node-status", nodes=[node("gpu-a"), node("gpu-b"), node("cpu-a")])
    first, second = facts(pod=pod("p")), facts(pod=pod("q"))
    first.share(base, ["nodes"])
    second.share(base, ["nodes"])
    assert node_names(first, "gpu") == ["gpu-a", "gpu-b"]
    assert node_names(second, "gpu") is node_names(first, "gpu")
    # arguments are compared by value: an equal string built apart is the same question
    assert node_names(second, "".join(["g", "pu"])) == ["gpu-a", "gpu-b"]
    assert node_names(second, "cpu") == ["cpu-a"]
    assert cluster_calls == ["gpu", "cpu"]


def test_other_nodes_are_another_cluster() -> None:
    """A value stands only for the very node map it was worked out of: a diagnosis with nodes of
    its own (not shared), or nodes put again, works it out afresh."""
    cluster_calls.clear()
    base = facts("node-status", nodes=[node("gpu-a")])
    shared, own = facts(pod=pod("p")), facts(pod=pod("q"), nodes=[node("gpu-z")])
    shared.share(base, ["nodes"])
    assert node_names(shared, "gpu") == ["gpu-a"]
    assert node_names(own, "gpu") == ["gpu-z"]
    base.put("nodes", {"gpu-b": node("gpu-b")})
    shared.share(base, ["nodes"])
    assert node_names(shared, "gpu") == ["gpu-b"]
    assert cluster_calls == ["gpu", "gpu", "gpu"]


def test_a_fact_put_again_after_a_change_in_place_is_seen() -> None:
    """Identity alone cannot tell a node map changed in place and put again: ``put`` lets go of
    what rested on it."""
    cluster_calls.clear()
    f = facts("node-status", nodes=[node("gpu-a")])
    assert node_names(f, "gpu") == ["gpu-a"]
    f.nodes["gpu-b"] = node("gpu-b")
    f.put("nodes", f.nodes)
    assert node_names(f, "gpu") == ["gpu-a", "gpu-b"]
    assert cluster_calls == ["gpu", "gpu"]


def test_diagnoses_sharing_the_nodes_share_what_their_gpu_capacities_are() -> None:
    """Each diagnosis asks ``node_gpu_capacity`` of the same candidate nodes: the diagnoses of one
    answer (sharing the node objects) share the memory of it, one that outlives each conclusion."""
    from bot.engine.runner import _capacities
    from bot.kube.resources import capacities_remembered, node_gpu_capacity

    base = facts("node-status", nodes=[node("gpu-a")])
    first, second, own = facts(pod=pod("p")), facts(pod=pod("q")), facts(pod=pod("r"), nodes=[node("gpu-a")])
    first.share(base, ["nodes"])
    second.share(base, ["nodes"])
    memory = _capacities(first)
    assert _capacities(second) is memory and _capacities(own) is not memory
    with capacities_remembered(memory):
        asked = node_gpu_capacity(first.nodes["gpu-a"])
    with capacities_remembered(_capacities(second)):
        assert node_gpu_capacity(second.nodes["gpu-a"]) is asked  # worked out once, for both
