"""``per_question``: a derivation several checks ask for is worked out once per question."""

from __future__ import annotations

from typing import Any

from bot.engine.checks._plugin import admitted_nodes, eligible_nodes
from bot.engine.facts import Facts, per_question
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
