"""Required inter-pod affinity and anti-affinity over nodes and pods, as the scheduler applies them."""

from __future__ import annotations

from typing import Any

from bot.kube.pod_affinity import evaluate, required_pod_terms
from bot.kube.selectors import selector_matches, selector_text


def _node(name: str, zone: str = "z1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                   "topology.kubernetes.io/zone": zone, **labels}}}


def _pod(name: str, node: str = "", ns: str = "ml", labels: dict[str, str] | None = None,
         affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec}


def _term(selector: dict[str, Any], key: str = "kubernetes.io/hostname", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": selector, "topologyKey": key, **extra}


NODES = {n["metadata"]["name"]: n for n in (_node("a", "z1"), _node("b", "z1"), _node("c", "z2"))}


def test_selectors() -> None:
    assert selector_matches({}, {"x": "1"})
    assert not selector_matches(None, {"x": "1"})
    sel = {"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}
    assert selector_matches(sel, {"app": "db", "tier": "b"})
    assert not selector_matches(sel, {"app": "db"})
    assert selector_text(sel) == "app=db, tier in (a, b)"


def test_affinity_follows_the_matching_pod() -> None:
    pod = _pod("gpu", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"matchLabels": {"app": "helper"}})]}})
    result = evaluate(pod, NODES, [_pod("helper-0", "c", labels={"app": "helper"})])
    assert result.allowed == ["c"]
    assert "no pod matching app=helper runs in its kubernetes.io/hostname" in result.refusals["a"][0]
    assert result.terms[0].where == ["ml/helper-0 on c (kubernetes.io/hostname=c)"]
    assert result.categories == {"pod_affinity"}


def test_zone_affinity_admits_the_whole_zone() -> None:
    pod = _pod("gpu", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"matchLabels": {"app": "helper"}}, "topology.kubernetes.io/zone")]}})
    result = evaluate(pod, NODES, [_pod("helper-0", "a", labels={"app": "helper"})])
    assert result.allowed == ["a", "b"]


def test_first_of_a_self_affine_group_may_go_anywhere() -> None:
    pod = _pod("w-0", labels={"app": "w"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"matchLabels": {"app": "w"}})]}})
    result = evaluate(pod, NODES, [])
    assert result.first_of_group and result.allowed == ["a", "b", "c"]


def test_anti_affinity_between_replicas_and_unbound_or_other_namespace_pods() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"matchLabels": {"app": "w"}})]}}
    pod = _pod("w-2", labels={"app": "w"}, affinity=anti)
    peers = [
        _pod("w-0", "a", labels={"app": "w"}, affinity=anti),
        _pod("w-1", "b", labels={"app": "w"}, affinity=anti),
        _pod("w-3", "", labels={"app": "w"}),  # not bound: the scheduler does not count it
        _pod("w-x", "c", ns="other", labels={"app": "w"}),  # another namespace: outside the term
    ]
    result = evaluate(pod, NODES, peers)
    assert result.allowed == ["c"]
    assert result.categories == {"pod_anti_affinity", "existing_anti_affinity"}


def test_existing_pods_anti_affinity_alone() -> None:
    keeper = _pod("exclusive", "a", labels={"app": "x"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term({"matchLabels": {"team": "ml"}})]}})
    result = evaluate(_pod("new", labels={"team": "ml"}), NODES, [keeper])
    assert result.allowed == ["b", "c"]
    assert "existing anti-affinity of ml/exclusive (on a)" in result.refusals["a"][0]
    assert result.categories == {"existing_anti_affinity"}


def test_namespaces_and_namespace_selector() -> None:
    term = _term({"matchLabels": {"app": "db"}}, namespaces=["data"])
    pod = _pod("gpu", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert required_pod_terms(pod)[0].namespaces == ("data",)
    result = evaluate(pod, NODES, [_pod("db-0", "b", ns="data", labels={"app": "db"}),
                                   _pod("db-1", "c", ns="ml", labels={"app": "db"})])
    assert result.allowed == ["b"]
    everywhere = _term({"matchLabels": {"app": "db"}}, namespaceSelector={})
    pod = _pod("gpu", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [everywhere]}})
    result = evaluate(pod, NODES, [_pod("db-1", "c", ns="anything", labels={"app": "db"})])
    assert result.allowed == ["c"]


def test_node_without_the_topology_label() -> None:
    nodes = {**NODES, "bare": {"metadata": {"name": "bare", "labels": {}}}}
    pod = _pod("gpu", affinity={
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term({"matchLabels": {"app": "h"}}, "topology.kubernetes.io/zone")]}})
    result = evaluate(pod, nodes, [_pod("h", "c", labels={"app": "h"})])
    assert "bare" not in result.allowed  # affinity needs the label
    anti = _pod("gpu", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"matchLabels": {"app": "h"}}, "topology.kubernetes.io/zone")]}})
    assert "bare" in evaluate(anti, nodes, [_pod("h", "c", labels={"app": "h"})]).allowed


def test_no_terms_no_refusals() -> None:
    result = evaluate(_pod("plain"), NODES, [_pod("x", "a")])
    assert result.allowed == ["a", "b", "c"] and result.terms == [] and not result.categories


def test_malformed_terms_never_raise() -> None:
    odd = _pod("odd", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": "app=x", "topologyKey": "kubernetes.io/hostname"},
        {"labelSelector": {"matchLabels": ["a"], "matchExpressions": ["b"]}},
        "not a term",
    ]}, "podAntiAffinity": "nonsense"})
    result = evaluate(odd, NODES, [_pod("x", "a", labels={"app": "x"})])
    assert result.allowed == []  # a selector that matches nothing admits no node
    assert selector_text({"matchLabels": ["a"]}) == "(every pod)"
