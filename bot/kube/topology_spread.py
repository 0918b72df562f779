"""Pod topology spread constraints, counted the way the scheduler's PodTopologySpread filter counts.

For each ``DoNotSchedule`` constraint: the domains are the values of ``topologyKey`` on the nodes
the pod may use (its nodeSelector and required node affinity, the default ``nodeAffinityPolicy:
Honor``); a domain's count is the matching pods (the constraint's selector plus the pod's own
values of ``matchLabelKeys``, same namespace) on its nodes. Placing the pod in a domain must not
make that domain's count exceed the smallest count by more than ``maxSkew``; with fewer domains
than ``minDomains`` the smallest count is 0. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kube.affinity import node_matches
from bot.kube.objects import labels_of, meta_of
from bot.kube.selectors import selector_matches, selector_text

Obj = Mapping[str, Any]
TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Domain:
    """One value of a constraint's ``topologyKey``: its usable nodes, the matching pods on them, and
    whether this pod may go there, so a message can name the domain that blocks it."""

    value: str
    nodes: int
    count: int
    #: the pod may go here without breaking maxSkew
    allowed: bool
    node_names: tuple[str, ...] = ()


@dataclass
class SpreadResult:
    """One hard constraint counted over the nodes."""

    topology_key: str
    max_skew: int
    selector: str
    domains: list[Domain] = field(default_factory=list)
    #: nodes the pod may use that lack the topology key (the scheduler skips them: "missing required label")
    unlabelled: list[str] = field(default_factory=list)
    min_domains: int = 0

    @property
    def blocked(self) -> bool:
        return bool(self.domains) and not any(d.allowed for d in self.domains)

    def describe(self) -> str:
        parts = [f"{d.value}={d.count}" for d in self.domains[:8]]
        more = f" and {len(self.domains) - 8} more" if len(self.domains) > 8 else ""
        return ", ".join(parts) + more or "no domain"


def hard_constraints(pod: Obj) -> list[Obj]:
    """The pod's ``DoNotSchedule`` topology spread constraints (the default when unset)."""
    out = []
    for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
        if isinstance(c, Mapping) and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            out.append(c)
    return out


def _selector(constraint: Obj, pod: Obj) -> dict[str, Any]:
    selector = dict(constraint.get("labelSelector") or {})
    labels = labels_of(pod)
    keys = [k for k in constraint.get("matchLabelKeys") or [] if k in labels]
    if keys:
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), **{k: labels[k] for k in keys}}
    return selector


def evaluate(pod: Obj, nodes: Mapping[str, Obj], pods: Sequence[Obj]) -> list[SpreadResult]:
    """Every hard constraint of ``pod`` counted over ``nodes`` and the namespace's ``pods``."""
    namespace = meta_of(pod).get("namespace")
    me = meta_of(pod).get("uid")
    out = []
    for constraint in hard_constraints(pod):
        key = str(constraint.get("topologyKey") or "")
        selector = _selector(constraint, pod)
        try:
            skew, minimum = int(constraint.get("maxSkew") or 1), int(constraint.get("minDomains") or 0)
        except (TypeError, ValueError):
            continue
        result = SpreadResult(key, skew, selector_text(selector), min_domains=minimum)
        members: dict[str, list[str]] = {}
        node_domain: dict[str, str] = {}
        for name, node in sorted(nodes.items()):
            if not node_matches(pod, node).ok:
                continue
            labels = labels_of(node)
            if key not in labels:
                result.unlabelled.append(name)
                continue
            members.setdefault(str(labels[key]), []).append(name)
            node_domain[name] = str(labels[key])
        counts = dict.fromkeys(members, 0)
        for other in pods:
            meta, spec = meta_of(other), other.get("spec") or {}
            if meta.get("namespace") != namespace or meta.get("uid") == me or meta.get("deletionTimestamp"):
                continue
            if (other.get("status") or {}).get("phase") in TERMINAL:
                continue
            domain = node_domain.get(str(spec.get("nodeName") or ""))
            if domain is not None and selector_matches(selector, meta.get("labels") or {}):
                counts[domain] += 1
        smallest = 0 if len(counts) < minimum else min(counts.values(), default=0)
        result.domains = [Domain(v, len(members[v]), c, c + 1 - smallest <= skew, tuple(members[v]))
                          for v, c in sorted(counts.items())]
        out.append(result)
    return out
