"""Taints and tolerations with the scheduler's own matching rules.

Newer kube-schedulers no longer print which taint blocked a pod, so the bot recomputes it from
the node's taints and the pod's tolerations, and proposes the toleration that would match.

It never performs I/O and never suggests removing a taint: a taint is the node owner's decision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Effects that keep a new pod off a node. PreferNoSchedule only lowers the node's score.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

#: A cordoned node (``spec.unschedulable: true``) behaves as if it carried this taint: the
#: NodeUnschedulable plugin lets through only pods that tolerate it (DaemonSet pods do).
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT: dict[str, str] = {"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration matches one taint (core/v1 ``Toleration.ToleratesTaint``).

    An empty effect matches every effect; an empty key with ``Exists`` matches every taint;
    the operator defaults to ``Equal``; an unknown operator matches nothing.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False


def node_taints(node: Mapping[str, Any], *, include_unschedulable: bool = True) -> list[dict[str, Any]]:
    """The node's taints, plus the implicit unschedulable taint of a cordoned node.

    The node lifecycle controller usually adds that taint itself; it is added here only when
    missing, so a freshly cordoned node (or a scenario file) reads the same as a settled one.
    """
    spec = node.get("spec") or {}
    taints = [dict(t) for t in spec.get("taints") or [] if isinstance(t, Mapping)]
    if include_unschedulable and spec.get("unschedulable") is True and not any(
        t.get("key") == UNSCHEDULABLE_TAINT_KEY and t.get("effect") == "NoSchedule" for t in taints
    ):
        taints.append(dict(UNSCHEDULABLE_TAINT))
    return taints


def has_taints(node: Mapping[str, Any], *, include_unschedulable: bool = True) -> bool:
    """The node has a taint, or (with ``include_unschedulable``) a cordon: most nodes have
    neither, and a scan over every node can skip them without asking what a pod tolerates."""
    spec = node.get("spec") or {}
    return bool(spec.get("taints")) or (include_unschedulable and spec.get("unschedulable") is True)


def untolerated_taints(
    pod: Mapping[str, Any], node: Mapping[str, Any], *, include_unschedulable: bool = True
) -> list[dict[str, Any]]:
    """The NoSchedule/NoExecute taints of ``node`` that no toleration of ``pod`` matches.

    With ``include_unschedulable`` (default) a cordoned node contributes
    ``node.kubernetes.io/unschedulable:NoSchedule`` even if the taint is not in ``spec.taints``.
    """
    if not has_taints(node, include_unschedulable=include_unschedulable):
        return []  # most nodes: asked for every node, per question
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, Mapping)]
    return [
        taint
        for taint in node_taints(node, include_unschedulable=include_unschedulable)
        if taint.get("effect") in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
    ]


def taint_str(taint: Mapping[str, Any]) -> str:
    """``key=value:Effect`` as kubectl prints a taint (``key:Effect`` without a value)."""
    key = str(taint.get("key") or "")
    value = taint.get("value")
    effect = taint.get("effect") or ""
    text = f"{key}={value}" if value not in (None, "") else key
    return f"{text}:{effect}" if effect else text


def suggest_toleration(taint: Mapping[str, Any], *, exact: bool = False) -> dict[str, str]:
    """The toleration that lets a pod onto a node with ``taint``.

    ``Exists`` is the default (the field notes' advice for ``nvidia.com/gpu=true:NoSchedule``):
    it keeps working if the node owner changes the value. ``exact=True`` pins the value.
    """
    toleration: dict[str, str] = {"key": str(taint.get("key") or "")}
    value = taint.get("value")
    if exact and value not in (None, ""):
        toleration["operator"] = "Equal"
        toleration["value"] = str(value)
    else:
        toleration["operator"] = "Exists"
    if taint.get("effect"):
        toleration["effect"] = str(taint["effect"])
    return toleration


def toleration_yaml(taint: Mapping[str, Any], *, exact: bool = False) -> str:
    """The ``tolerations:`` snippet to paste into a pod spec, values double-quoted.

    JSON strings are valid YAML double-quoted scalars, so json.dumps quotes safely even for
    values such as ``true`` that YAML would otherwise read as booleans.
    """
    lines = ["tolerations:"]
    for index, (field, value) in enumerate(suggest_toleration(taint, exact=exact).items()):
        lines.append(f"{'- ' if index == 0 else '  '}{field}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"
