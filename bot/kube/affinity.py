"""Does a pod's nodeSelector / required node affinity admit a node, and if not, why not.

The scheduler only says "didn't match Pod's node affinity/selector"; the user needs to see which
label differs on which node. This module evaluates the same rules as the NodeAffinity plugin
(``component-helpers/scheduling/corev1/nodeaffinity``) and explains each mismatch in words.

It never performs I/O. Preferred (soft) affinity is ignored: it never blocks scheduling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kube.objects import labels_of, name_of
from bot.kube.taints import untolerated_taints


@dataclass(frozen=True)
class MatchResult:
    """Whether a node passes the pod's node selection, and the reasons it does not."""

    ok: bool
    #: human lines, e.g. ``nodeSelector gpu-type=a100 vs node label gpu-type=v100``
    mismatches: list[str] = field(default_factory=list)


def _fmt_values(values: Sequence[Any]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _as_int(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str], *, what: str) -> str | None:
    """None when the requirement holds, else the line that says why it does not."""
    key = str(expr.get("key", ""))
    operator = str(expr.get("operator", ""))
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    actual = labels.get(key)
    shown = f"{what} {actual}" if what == "node name" else f"node label {key}={actual}"
    missing = f"node name {actual}" if what == "node name" else f"label {key} missing"
    wanted = f"{key} {operator} {_fmt_values(values)}" if values else f"{key} {operator}"
    if operator == "In":
        ok = present and actual in values
    elif operator == "NotIn":
        ok = not present or actual not in values
    elif operator == "Exists":
        ok = present
    elif operator == "DoesNotExist":
        ok = not present
    elif operator in ("Gt", "Lt"):
        # The API demands exactly one integer value; a non-integer label fails the match.
        bound = _as_int(values[0]) if len(values) == 1 else None
        number = _as_int(actual) if present else None
        if bound is None:
            return f"{wanted}: {operator} needs exactly one integer value"
        ok = number is not None and (number > bound if operator == "Gt" else number < bound)
    else:
        return f"{wanted}: unknown operator {operator!r}"
    if ok:
        return None
    return f"{wanted}: {shown if present else missing}"


def _term_mismatches(term: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    labels = _labels(node)
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        # An empty term matches no node (NodeAffinity plugin semantics).
        return ["empty nodeSelectorTerm matches no node"]
    lines = [line for e in expressions if (line := _requirement(e, labels, what="label")) is not None]
    node_fields = {"metadata.name": name_of(node)}
    for expr in fields:
        if expr.get("key") != "metadata.name" or expr.get("operator") not in ("In", "NotIn"):
            key, operator = expr.get("key"), expr.get("operator")
            lines.append(f"matchFields {key} {operator}: only metadata.name In/NotIn is valid")
            continue
        line = _requirement(expr, node_fields, what="node name")
        if line is not None:
            lines.append(line)
    return lines


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    raw = labels_of(node)
    return {str(k): str(v) for k, v in raw.items()}


def required_terms(pod: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The required nodeSelectorTerms, or None when the pod sets no required node affinity."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or [])


def selects_nodes(pod: Mapping[str, Any]) -> bool:
    """Whether the pod sets a nodeSelector or required node affinity (else every node matches)."""
    return bool((pod.get("spec") or {}).get("nodeSelector")) or required_terms(pod) is not None


def node_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> MatchResult:
    """Evaluate nodeSelector (every pair must match) AND required affinity (any term may match)."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    terms = required_terms(pod)
    if not selector and terms is None:  # ``selects_nodes`` is False
        # no node selection at all: every node matches (checks ask this for every node, per question)
        return MatchResult(ok=True, mismatches=[])
    mismatches: list[str] = []
    # the node's own label map, read in place: copying it per node cost more than the comparison
    labels = labels_of(node) if selector else {}
    for key, wanted in selector.items():
        if key not in labels:
            mismatches.append(f"nodeSelector {key}={wanted}: label {key} missing")
        elif str(labels[key]) != str(wanted):
            mismatches.append(f"nodeSelector {key}={wanted} vs node label {key}={labels[key]}")
    if terms is not None:
        if not terms:
            mismatches.append("node affinity has no nodeSelectorTerms, so it matches no node")
        else:
            per_term = [_term_mismatches(term, node) for term in terms]
            if all(per_term):
                for index, lines in enumerate(per_term, start=1):
                    prefix = "node affinity" if len(terms) == 1 else f"node affinity term {index}"
                    mismatches.extend(f"{prefix}: {line}" for line in lines)
    return MatchResult(ok=not mismatches, mismatches=mismatches)


def describe_selection(pod: Mapping[str, Any]) -> list[str]:
    """The pod's node-selection rules as lines, to show beside the nodes' labels."""
    lines = [f"nodeSelector {k}={v}" for k, v in ((pod.get("spec") or {}).get("nodeSelector") or {}).items()]
    terms = required_terms(pod)
    for index, term in enumerate(terms or [], start=1):
        parts = []
        for kind in ("matchExpressions", "matchFields"):
            for expr in term.get(kind) or []:
                values = expr.get("values") or []
                suffix = f" {_fmt_values(values)}" if values else ""
                parts.append(f"{expr.get('key')} {expr.get('operator')}{suffix}")
        label = "required node affinity" if len(terms or []) == 1 else f"required node affinity term {index}"
        lines.append(f"{label}: {' AND '.join(parts) or '(empty)'}")
    return lines


def matching_nodes(pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the nodes whose labels satisfy the pod's node selection."""
    return [name_of(n) for n in nodes if node_matches(pod, n).ok]


def reaches_resource_fit(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the scheduler's filters that run before NodeResourcesFit pass this node.

    NodeUnschedulable, TaintToleration and NodeAffinity come first and a node is reported under
    the first filter it fails, so only a node passing these can be counted as ``Insufficient X``.
    A cordoned node counts as tainted ``node.kubernetes.io/unschedulable:NoSchedule``.
    """
    return not untolerated_taints(pod, node) and node_matches(pod, node).ok
