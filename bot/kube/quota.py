"""ResourceQuota refusals: the API server's message taken apart, and who uses a quota.

A ResourceQuota is enforced at admission, before a pod exists: the controller that tried to create
it (ReplicaSet, Job, StatefulSet) records ``FailedCreate`` with the API server's text, e.g.

    Error creating: pods "x-5d8f9c7b6-abcde" is forbidden: exceeded quota: gpu-quota,
    requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4,
    limited: requests.nvidia.com/gpu=4

(``plugin/pkg/admission/resourcequota/controller.go``; before Kubernetes 1.9 it began with a
capital ``Exceeded``). A quota on a compute resource also refuses pods that do not state it
(``failed quota: NAME: must specify requests.cpu,requests.memory``). The workload then has fewer
pods than it wants, often none, and no pod carries an event at all.

This module parses those texts and works out how much of a quota resource each pod uses, with the
quota evaluator's rules (non-terminal pods only, requests defaulting to limits, scopes). It never
performs I/O and never raises on any text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.kube.objects import meta_of
from bot.kube.resources import container_requests, parse_quantity

Obj = Mapping[str, Any]

#: resources counted in bytes: shown with a binary suffix
_BYTE_RESOURCES = ("memory", "storage", "hugepages-")
#: pod phases the quota evaluator no longer counts
_TERMINAL = frozenset({"Succeeded", "Failed"})

_POD_NAME = re.compile(r'pods?\s+"(?P<pod>[^"]*)"\s+is forbidden', re.IGNORECASE)
_EXCEEDED = re.compile(
    r"exceeded quota:\s*(?P<name>[^,\s]+),\s*requested:\s*(?P<req>\S*?),\s*used:\s*(?P<used>\S*?),"
    r"\s*limited:\s*(?P<lim>[^\s\"']*)",
    re.IGNORECASE,
)
_MUST_SPECIFY = re.compile(r"failed quota:\s*(?P<name>[^:\s]+):\s*must specify\s+(?P<what>[^\s\"']+)", re.IGNORECASE)
_STATUS_UNKNOWN = re.compile(r"status unknown for quota:\s*(?P<name>[^\s,\"']+)", re.IGNORECASE)


@dataclass(frozen=True)
class QuotaDenial:
    """One refusal by the ResourceQuota admission plugin."""

    #: ``exceeded`` (over the hard limit), ``must_specify`` (a constrained resource not stated),
    #: ``status_unknown`` (the quota controller has not computed usage yet)
    kind: str
    #: the ResourceQuota's name
    quota: str
    #: the refused pod's name from ``pods "NAME" is forbidden`` ("" when absent)
    pod: str = ""
    #: quota resource -> the text after ``=`` (``requests.nvidia.com/gpu`` -> ``1``)
    requested: dict[str, str] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    limited: dict[str, str] = field(default_factory=dict)
    #: resources a ``must specify`` refusal names
    missing: tuple[str, ...] = ()

    @property
    def resources(self) -> list[str]:
        """The quota resources this refusal is about."""
        return sorted(set(self.requested) | set(self.limited) | set(self.missing))

    def describe(self) -> str:
        """One line in words: what was asked against what was left."""
        if self.kind == "must_specify":
            return f"quota {self.quota} requires every pod to state {', '.join(self.missing)}"
        if self.kind == "status_unknown":
            return f"quota {self.quota} has no usage computed yet (status unknown)"
        parts = [
            f"{r}: asks {self.requested.get(r, '?')}, {self.used.get(r, '?')} of {self.limited.get(r, '?')} used"
            for r in self.resources
        ]
        return f"quota {self.quota}: " + "; ".join(parts)


def parse_resource_list(text: str) -> dict[str, str]:
    """``requests.cpu=1,limits.memory=2Gi`` as a dict (quantities kept as text)."""
    out: dict[str, str] = {}
    for item in text.strip().strip(".,").split(","):
        name, sep, value = item.strip().partition("=")
        if sep and name:
            out[name] = value.strip()
    return out


def parse_quota_denial(message: str) -> QuotaDenial | None:
    """The quota refusal in a FailedCreate message, or None when the message is not one."""
    text = message if isinstance(message, str) else str(message)
    pod_match = _POD_NAME.search(text)
    pod = pod_match.group("pod") if pod_match else ""
    exceeded = _EXCEEDED.search(text)
    if exceeded is not None:
        return QuotaDenial(
            "exceeded",
            exceeded.group("name"),
            pod,
            requested=parse_resource_list(exceeded.group("req")),
            used=parse_resource_list(exceeded.group("used")),
            limited=parse_resource_list(exceeded.group("lim")),
        )
    must = _MUST_SPECIFY.search(text)
    if must is not None:
        missing = tuple(p for p in must.group("what").strip(".,").split(",") if p)
        return QuotaDenial("must_specify", must.group("name"), pod, missing=missing)
    unknown = _STATUS_UNKNOWN.search(text)
    if unknown is not None:
        return QuotaDenial("status_unknown", unknown.group("name"), pod)
    return None


# ------------------------------------------------------------------ usage per pod


def _quantity(value: Any) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, ArithmeticError, TypeError):
        return None


def _limits(container: Obj) -> dict[str, Decimal]:
    raw = ((container.get("resources") or {}).get("limits")) or {}
    out: dict[str, Decimal] = {}
    for name, value in raw.items():
        quantity = _quantity(value)
        if quantity is not None:
            out[str(name)] = quantity
    return out


def _pod_totals(spec: Obj, per_container: Any) -> dict[str, Decimal]:
    """Sum over app containers, the larger of that and each init container (as the evaluator does)."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for name, quantity in per_container(container).items():
            total[name] = total.get(name, Decimal(0)) + quantity
    for init in spec.get("initContainers") or []:
        for name, quantity in per_container(init).items():
            total[name] = max(total.get(name, Decimal(0)), quantity)
    return total


def pod_quota_usage(pod: Obj, resource: str) -> Decimal:
    """How much of quota resource ``resource`` a pod (or a pod template) counts for.

    ``pods``/``count/pods`` count 1; ``requests.X`` and bare ``cpu``/``memory`` count requests
    (limits stand in where a request is missing, as the API server defaults them); ``limits.X``
    counts limits. Extended resources (``requests.nvidia.com/gpu``) have only a requests form.
    """
    if resource in ("pods", "count/pods"):
        return Decimal(1)
    spec = pod.get("spec") or {}
    if resource.startswith("limits."):
        return _pod_totals(spec, _limits).get(resource.removeprefix("limits."), Decimal(0))
    name = resource.removeprefix("requests.")
    return _pod_totals(spec, container_requests).get(name, Decimal(0))


def counts_against_quota(pod: Obj) -> bool:
    """A pod the quota still counts: not Succeeded/Failed (a Terminating pod still counts)."""
    return str((pod.get("status") or {}).get("phase") or "") not in _TERMINAL


def _best_effort(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        if any(k in ("cpu", "memory") for k in [*(resources.get("requests") or {}), *(resources.get("limits") or {})]):
            return False
    return True


def _scope_matches(scope: str, operator: str, values: Sequence[str], pod: Obj) -> bool | None:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None
    if scope == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "PriorityClass":
        name = str(spec.get("priorityClassName") or "")
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return name in values
        if operator == "NotIn":
            return name not in values
    return None  # CrossNamespacePodAffinity and unknown scopes: not decided here


def quota_selects(quota: Obj, pod: Obj) -> bool:
    """Whether a quota's scopes (and scopeSelector) take in this pod; unknown scopes count as yes."""
    spec = quota.get("spec") or {}
    checks: list[tuple[str, str, Sequence[str]]] = [(str(s), "Exists", ()) for s in spec.get("scopes") or []]
    for expr in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        checks.append((str(expr.get("scopeName")), str(expr.get("operator") or ""), list(expr.get("values") or [])))
    return all(_scope_matches(scope, op, values, pod) is not False for scope, op, values in checks)


@dataclass(frozen=True)
class QuotaLine:
    """One resource of a quota: what it allows, what is used, what the workload would add."""

    resource: str
    hard: str
    used: str
    #: what one more pod of the workload adds (0 when the template does not use it)
    asks: Decimal
    #: used + asks > hard
    full: bool


def quota_lines(quota: Obj, template: Obj | None = None) -> list[QuotaLine]:
    """The quota's resources from ``status`` (``spec.hard`` when status is empty), with the
    template pod's demand and whether one more pod would go over."""
    status = quota.get("status") or {}
    hard = status.get("hard") or (quota.get("spec") or {}).get("hard") or {}
    used = status.get("used") or {}
    lines = []
    for resource in sorted(hard):
        asks = pod_quota_usage(template, resource) if template is not None else Decimal(0)
        limit, now = _quantity(hard[resource]), _quantity(used.get(resource, "0"))
        full = limit is not None and now is not None and asks > 0 and now + asks > limit
        lines.append(QuotaLine(str(resource), str(hard[resource]), str(used.get(resource, "0")), asks, full))
    return lines


@dataclass(frozen=True)
class QuotaUser:
    """A pod that counts against a quota resource."""

    name: str
    amount: Decimal
    phase: str
    terminating: bool
    node: str


def quota_users(quota: Obj, resource: str, pods: Iterable[Obj]) -> list[QuotaUser]:
    """The pods using ``resource`` of ``quota``, largest first (only the quota's namespace)."""
    namespace = meta_of(quota).get("namespace")
    users = []
    for pod in pods:
        meta = meta_of(pod)
        if namespace and meta.get("namespace") not in (None, namespace):
            continue
        if not counts_against_quota(pod) or not quota_selects(quota, pod):
            continue
        amount = pod_quota_usage(pod, resource)
        if amount > 0:
            users.append(
                QuotaUser(
                    name=str(meta.get("name", "")),
                    amount=amount,
                    phase=str((pod.get("status") or {}).get("phase") or "?"),
                    terminating=bool(meta.get("deletionTimestamp")),
                    node=str((pod.get("spec") or {}).get("nodeName") or ""),
                )
            )
    users.sort(key=lambda u: (-u.amount, u.name))
    return users


def fmt_quantity(resource: str, value: Decimal) -> str:
    """A quantity for people: bytes with a binary suffix, everything else as a plain number."""
    if any(k in resource for k in _BYTE_RESOURCES) and value >= 1024:
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size:
                scaled = value / size
                return f"{int(scaled)}{suffix}" if scaled == scaled.to_integral() else f"{float(scaled):.1f}{suffix}"
    if value == value.to_integral():
        return str(int(value))
    if value < 1 and (value * 1000) == (value * 1000).to_integral():
        return f"{int(value * 1000)}m"
    return f"{value.normalize():f}"


__all__ = [
    "QuotaDenial",
    "QuotaLine",
    "QuotaUser",
    "counts_against_quota",
    "fmt_quantity",
    "parse_quota_denial",
    "parse_resource_list",
    "pod_quota_usage",
    "quota_lines",
    "quota_selects",
    "quota_users",
]
