"""Required inter-pod affinity and anti-affinity: which nodes they leave a pod, and why.

The scheduler only counts nodes ("2 node(s) didn't match pod anti-affinity rules"); the user needs
to see which pods the rule is about, the topology it compares (``kubernetes.io/hostname``, a zone)
and where those pods are. This module evaluates the InterPodAffinity plugin's required rules:

- a required ``podAffinity`` term admits a node whose topology value equals that of a node
  running a matching pod; when no pod in the cluster matches any term and the pod matches its own
  terms, it is the first of its group and every node carrying the topology labels is admitted;
- a required ``podAntiAffinity`` term refuses a node that shares a topology value with a node
  running a matching pod;
- an existing pod's required anti-affinity term that matches this pod refuses every node in the
  existing pod's topology domain.

Preferred (soft) terms never block and are ignored. A term's namespaces are its ``namespaces``
plus those its ``namespaceSelector`` selects; with neither, the owning pod's own namespace. It
never performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kube.objects import labels_of, name_of, namespace_of
from bot.kube.selectors import selector_matches, selector_text

Obj = Mapping[str, Any]


def _labels(obj: Obj) -> dict[str, str]:
    return {str(k): str(v) for k, v in (labels_of(obj)).items()}


def _namespace(obj: Obj) -> str:
    return (namespace_of(obj) or "default")



@dataclass(frozen=True)
class PodTerm:
    """One required (anti-)affinity term, resolved against its owner's namespace."""

    #: ``affinity`` or ``anti-affinity``
    kind: str
    selector: Obj | None
    topology_key: str
    #: namespaces named in the term (or the owner's namespace when neither list nor selector is set)
    namespaces: tuple[str, ...]
    #: ``namespaceSelector`` (``{}`` = every namespace); None when the term has none
    namespace_selector: Obj | None
    #: ``namespace/name`` of the pod whose spec holds the term
    owner: str

    def covers_namespace(self, namespace: str, namespaces: Mapping[str, Obj]) -> bool:
        if namespace in self.namespaces:
            return True
        if self.namespace_selector is None:
            return False
        ns_obj = namespaces.get(namespace) or {"metadata": {"name": namespace}}
        labels = {"kubernetes.io/metadata.name": namespace, **_labels(ns_obj)}
        return selector_matches(self.namespace_selector, labels)

    def matches(self, pod: Obj, namespaces: Mapping[str, Obj]) -> bool:
        return self.covers_namespace(_namespace(pod), namespaces) and selector_matches(self.selector, _labels(pod))

    def describe(self, namespaces_known: bool = True) -> str:
        if self.namespace_selector is not None:
            where = (
                f"namespaces matching {selector_text(self.namespace_selector)}"
                if self.namespace_selector else "any namespace"
            )
            if self.namespaces:
                where = f"{', '.join(self.namespaces)} or {where}"
        else:
            where = "namespace " + ", ".join(self.namespaces)
        verb = "must share" if self.kind == "affinity" else "must not share"
        return f"{verb} {self.topology_key} with pods matching {selector_text(self.selector)} in {where}"


def required_pod_terms(pod: Obj, *, kinds: Sequence[str] = ("affinity", "anti-affinity")) -> list[PodTerm]:
    """The pod's required podAffinity / podAntiAffinity terms."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    own_ns = _namespace(pod)
    owner = f"{own_ns}/{name_of(pod)}"
    out: list[PodTerm] = []
    for kind, key in (("affinity", "podAffinity"), ("anti-affinity", "podAntiAffinity")):
        if kind not in kinds:
            continue
        section = affinity.get(key) or {}
        if not isinstance(section, Mapping):
            continue
        for term in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if not isinstance(term, Mapping):
                continue
            listed = tuple(str(n) for n in term.get("namespaces") or [])
            ns_selector = term.get("namespaceSelector")
            namespaces = listed or (() if ns_selector is not None else (own_ns,))
            selector = term.get("labelSelector")
            out.append(
                PodTerm(
                    kind=kind,
                    selector=selector if isinstance(selector, Mapping) else None,
                    topology_key=str(term.get("topologyKey") or ""),
                    namespaces=namespaces,
                    namespace_selector=ns_selector if isinstance(ns_selector, Mapping) else None,
                    owner=owner,
                )
            )
    return out


@dataclass
class TermResult:
    """How one term of the pending pod (or of an existing pod) shapes the candidate nodes."""

    term: PodTerm
    #: ``own`` for the pending pod's terms, ``existing`` for another pod's anti-affinity
    origin: str
    #: the matching bound pods as ``name on node (key=value)``
    where: list[str] = field(default_factory=list)
    #: node -> allowed by this term
    allows: dict[str, bool] = field(default_factory=dict)

    def describe(self) -> str:
        if self.origin == "existing":
            return (f"existing pod {self.term.owner} has required anti-affinity against this pod "
                    f"({selector_text(self.term.selector)}, topology {self.term.topology_key})")
        return f"pod {self.term.kind}: {self.term.describe()}"


@dataclass
class AffinityResult:
    """Inter-pod affinity verdicts for the nodes looked at."""

    terms: list[TermResult] = field(default_factory=list)
    #: node -> lines saying which terms refuse it (empty: admitted)
    refusals: dict[str, list[str]] = field(default_factory=dict)
    #: the pod matches its own affinity terms and no pod matches them: it may go anywhere
    first_of_group: bool = False

    def allows(self, node: str) -> bool:
        return not self.refusals.get(node)

    @property
    def allowed(self) -> list[str]:
        return sorted(n for n, lines in self.refusals.items() if not lines)

    @property
    def categories(self) -> set[str]:
        """The scheduler categories the refusing terms correspond to."""
        out: set[str] = set()
        for t in self.terms:
            if all(t.allows.values()):
                continue
            if t.origin == "existing":
                out.add("existing_anti_affinity")
            else:
                out.add("pod_affinity" if t.term.kind == "affinity" else "pod_anti_affinity")
        return out


def _node_of(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _where(pod: Obj, nodes: Mapping[str, Obj], key: str) -> str:
    node = _node_of(pod)
    value = _labels(nodes.get(node) or {}).get(key)
    topo = f"{key}={value}" if value is not None else f"no {key} label"
    return f"{_namespace(pod)}/{name_of(pod)} on {node} ({topo})"


def evaluate(
    pod: Obj,
    nodes: Mapping[str, Obj],
    peers: Sequence[Obj],
    namespaces: Mapping[str, Obj] | None = None,
) -> AffinityResult:
    """The required inter-pod rules of ``pod`` (and existing pods' anti-affinity) over ``nodes``.

    ``peers`` are the pods the rules could be about; only those bound to a node (``spec.nodeName``)
    and not the pod itself are considered, as the scheduler only sees assigned pods.
    """
    ns_map = namespaces or {}
    me = (_namespace(pod), name_of(pod))
    bound = [p for p in peers if _node_of(p) and (_namespace(p), name_of(p)) != me and _node_of(p) in nodes]
    node_labels = {name: _labels(node) for name, node in nodes.items()}
    result = AffinityResult(refusals={name: [] for name in nodes})

    own = required_pod_terms(pod)
    affinity_terms = [t for t in own if t.kind == "affinity"]
    matches = {id(t): [p for p in bound if t.matches(p, ns_map)] for t in own}
    if affinity_terms and not any(matches[id(t)] for t in affinity_terms):
        result.first_of_group = all(t.matches(pod, ns_map) for t in affinity_terms)

    for term in own:
        tr = TermResult(term, "own", [_where(p, nodes, term.topology_key) for p in matches[id(term)]])
        domains = {node_labels[_node_of(p)].get(term.topology_key) for p in matches[id(term)]} - {None}
        for name, labels in node_labels.items():
            value = labels.get(term.topology_key)
            if term.kind == "affinity":
                ok = value is not None and (result.first_of_group or value in domains)
            else:
                ok = value is None or value not in domains
            tr.allows[name] = ok
            if not ok:
                if term.kind == "affinity":
                    why = (f"no pod matching {selector_text(term.selector)} runs in its "
                           f"{term.topology_key}" + (f" ({term.topology_key}={value})" if value is not None
                                                     else f" (the node has no {term.topology_key} label)"))
                else:
                    why = f"a pod matching {selector_text(term.selector)} already runs in {term.topology_key}={value}"
                result.refusals[name].append(f"pod {term.kind}: {why}")
        result.terms.append(tr)

    for other in bound:
        for term in required_pod_terms(other, kinds=("anti-affinity",)):
            if not term.matches(pod, ns_map):
                continue
            node = _node_of(other)
            value = node_labels[node].get(term.topology_key)
            tr = TermResult(term, "existing", [_where(other, nodes, term.topology_key)])
            for name, labels in node_labels.items():
                ok = value is None or labels.get(term.topology_key) != value
                tr.allows[name] = ok
                if not ok:
                    result.refusals[name].append(
                        f"existing anti-affinity of {term.owner} (on {node}) keeps this pod out of "
                        f"{term.topology_key}={value}"
                    )
            result.terms.append(tr)
    return result


__all__ = [
    "AffinityResult",
    "PodTerm",
    "TermResult",
    "evaluate",
    "required_pod_terms",
]
