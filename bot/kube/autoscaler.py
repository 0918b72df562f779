"""Node autoscalers' verdicts on a pending pod: cluster-autoscaler and Karpenter events, parsed.

A pending pod in an autoscaled cluster waits for a node that may never come. Both autoscalers say
why on the pod itself:

- cluster-autoscaler records ``NotTriggerScaleUp`` (``processors/status``):
  ``pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, 1 max node
  group size reached``. The histogram counts *node groups*, not nodes: each group's template node
  was tried and rejected for a scheduler reason, or the group was skipped (max size reached, in
  backoff, not ready). Releases before about 1.19 wrote ``pod didn't trigger scale-up (it wouldn't
  fit if a new node is added)``, with or without ``: <reasons>`` after it. ``TriggeredScaleUp``
  (``pod triggered scale-up: [{group 0->1 (max: 3)}]``) is the good news.
- Karpenter records ``FailedScheduling`` itself (``Failed to schedule pod, <error>``), one error per
  NodePool (Provisioner before v0.32) joined by ``; ``: ``incompatible with nodepool "gpu",
  daemonset overhead={...}, no instance type satisfied resources {...} and requirements ...``.
  ``Nominated`` (``Pod should schedule on: nodeclaim/...``) is the good news.

This module turns those texts into per-group verdicts. It never performs I/O and never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.kube.objects import labels_of
from bot.kube.scheduling import classify_reason, event_source, event_time, split_histogram

Obj = Mapping[str, Any]

CLUSTER_AUTOSCALER = "cluster-autoscaler"
KARPENTER = "karpenter"
#: event reasons that say a node is on its way (newer than a refusal: the refusal is stale)
PROGRESS_REASONS = frozenset({"TriggeredScaleUp", "Nominated"})

_CA_HEAD = re.compile(r"pod didn't trigger scale-up(?P<fit>\s*\(it wouldn't fit if a new node is added\))?:?\s*")
_COUNTED = re.compile(r"(\d{1,9})\s+(\S.*)", re.DOTALL)
_KARPENTER_HEAD = "Failed to schedule pod, "
_POOL = re.compile(r'(?:in)?compatible with (?P<what>nodepool|provisioner)\s+"(?P<name>[^"]*)",?\s*')
_LIMITS = re.compile(r'all available instance types exceed limits for (?:nodepool|provisioner):?\s*"(?P<name>[^"]*)"')
_RESOURCES = re.compile(r"no instance type satisfied resources\s+(?P<json>\{[^{}]*\})")
_REQUIREMENTS = re.compile(r"\band requirements\s+(?P<reqs>.*?)(?:\s+\((?P<why>[^()]*)\))?\s*$", re.DOTALL)

#: cluster-autoscaler reasons for skipping a node group (no template node was even tried)
_SKIP_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"max node group size reached"), "max_size"),
    (re.compile(r"max cluster \S+ limit reached|max limit reached"), "cluster_limit"),
    (re.compile(r"not ready for scale-up|in backoff|backoff"), "backoff"),
    (re.compile(r"not (?:in )?(?:a )?registered|unregistered"), "not_registered"),
)


@dataclass(frozen=True)
class GroupReason:
    """One reason the autoscaler gave, for ``count`` node groups (Karpenter: for one NodePool)."""

    count: int
    text: str
    #: scheduler categories (``insufficient_gpu``, ``node_selector``, ``untolerated_taint``...) for a
    #: rejected template, or ``max_size``, ``cluster_limit``, ``backoff``, ``not_registered``,
    #: ``no_instance_type``, ``requirements``, ``taint``, ``limits``, ``other``
    category: str
    #: the resource of an ``Insufficient X`` reason
    resource: str | None = None
    #: the NodePool / Provisioner name (Karpenter only)
    group: str = ""
    #: Karpenter: the resources it tried to fit, as its JSON printed them
    resources: dict[str, str] = field(default_factory=dict)
    #: Karpenter: the requirements text and its parenthesised verdict
    requirements: str = ""
    why: str = ""

    @property
    def shortfall(self) -> list[str]:
        """Karpenter: what no instance type satisfied (``requirements``, ``resources``, ``offering``)."""
        return karpenter_shortfall(self.why)

    @property
    def skipped(self) -> bool:
        """The group was not even tried (size, limits, backoff): the pod might fit its nodes."""
        return self.category in ("max_size", "cluster_limit", "backoff", "not_registered", "limits")


@dataclass(frozen=True)
class ScaleUpRefusal:
    """An autoscaler's "no node for this pod", parsed."""

    #: ``cluster-autoscaler`` or ``karpenter``
    source: str
    reasons: list[GroupReason]
    raw: str
    #: the old ``(it wouldn't fit if a new node is added)`` wording was used
    wouldnt_fit: bool = False

    @property
    def groups_considered(self) -> int:
        return sum(r.count for r in self.reasons)

    def lines(self) -> list[str]:
        """Each reason in words, one line per reason (Karpenter: per NodePool)."""
        out = []
        for r in self.reasons:
            if r.group:
                line = f'NodePool "{r.group}": {r.text}'
            else:
                noun = "node group" if r.count == 1 else "node groups"
                line = f"{r.count} {noun}: {r.text}"
            out.append(line)
        return out


_DIMENSIONS = (
    ("requirements", re.compile(r"met (?:the scheduling|all) requirements")),
    ("resources", re.compile(r"(?:had|has) enough resources")),
    ("offering", re.compile(r"(?:had|has) (?:a|the) required offering|the required offering")),
)


def karpenter_shortfall(why: str) -> list[str]:
    """What no instance type satisfied, from Karpenter's parenthesised verdict.

    ``no instance type which met the scheduling requirements and had enough resources, had a
    required offering`` names what the types did satisfy first and what failed last;
    ``no instance type met the scheduling requirements or had enough resources`` names the failed
    dimensions themselves.
    """
    text = why.strip()
    found = [(m.start(), name) for name, pattern in _DIMENSIONS for m in pattern.finditer(text)]
    if not found:
        return []
    found.sort()
    if text.startswith("no instance type which"):
        return [found[-1][1]]
    return sorted({name for _, name in found}, key=[d for d, _ in _DIMENSIONS].index)


def _ca_category(text: str) -> tuple[str, str | None]:
    for pattern, category in _SKIP_REASONS:
        if pattern.search(text):
            return category, None
    reason = classify_reason(0, text)
    if reason.category == "unrecognised":
        return "other", None
    return reason.category, reason.resource


def parse_cluster_autoscaler(message: str) -> ScaleUpRefusal | None:
    """A ``NotTriggerScaleUp`` message, or None when the text is not one."""
    text = " ".join(str(message).split())
    head = _CA_HEAD.search(text)
    if head is None:
        return None
    body = text[head.end():].strip().rstrip(".")
    reasons = []
    for item in split_histogram(body) if body else []:
        counted = _COUNTED.fullmatch(item)
        count, reason_text = (int(counted.group(1)), counted.group(2).strip().rstrip(".")) if counted else (0, item)
        category, resource = _ca_category(reason_text)
        reasons.append(GroupReason(count, reason_text, category, resource))
    return ScaleUpRefusal(CLUSTER_AUTOSCALER, reasons, str(message), wouldnt_fit=bool(head.group("fit")))


def _skip_json(text: str, start: int) -> int:
    """The index just past the ``{...}`` that starts at ``start`` (braces balanced, strings kept)."""
    depth = 0
    in_string = False
    index = start
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


def _json_resources(raw: str) -> dict[str, str]:
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def _karpenter_reason(part: str) -> GroupReason:
    limits = _LIMITS.search(part)
    if limits is not None:
        return GroupReason(1, part, "limits", group=limits.group("name"))
    pool = _POOL.search(part)
    group = pool.group("name") if pool else ""
    rest = part[pool.end():] if pool else part
    overhead = rest.find("daemonset overhead=")
    if overhead >= 0:
        brace = rest.find("{", overhead)
        end = _skip_json(rest, brace) if brace >= 0 else overhead + len("daemonset overhead=")
        rest = rest[end:].lstrip(" ,")
    rest = rest.strip()
    resources = _RESOURCES.search(rest)
    if resources is not None:
        tail = _REQUIREMENTS.search(rest, resources.end())
        return GroupReason(
            1,
            rest,
            "no_instance_type",
            group=group,
            resources=_json_resources(resources.group("json")),
            requirements=(tail.group("reqs").strip() if tail else ""),
            why=(tail.group("why") or "").strip() if tail else "",
        )
    if rest.startswith("incompatible requirements") or "incompatible requirements" in rest:
        return GroupReason(1, rest, "requirements", group=group)
    if "did not tolerate" in rest or "untolerated taint" in rest:
        return GroupReason(1, rest, "taint", group=group)
    return GroupReason(1, rest or part, "other", group=group)


def parse_karpenter(message: str) -> ScaleUpRefusal | None:
    """Karpenter's ``Failed to schedule pod, ...`` message, or None when the text is not one."""
    text = str(message).strip()
    if not text.startswith(_KARPENTER_HEAD):
        return None
    body = text[len(_KARPENTER_HEAD):]
    parts = [p.strip() for p in _split_pools(body) if p.strip()]
    return ScaleUpRefusal(KARPENTER, [_karpenter_reason(p) for p in parts], text)


def _split_pools(body: str) -> list[str]:
    """Split at the ``; `` that joins per-NodePool errors, never inside ``{...}`` or ``(...)``."""
    parts: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(body):
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth = max(depth - 1, 0)
        elif char == ";" and depth == 0:
            parts.append(body[start:index])
            start = index + 1
    parts.append(body[start:])
    return parts


def parse_autoscaler_event(event: Obj) -> ScaleUpRefusal | None:
    """The refusal an autoscaler event carries, whichever autoscaler wrote it."""
    message = str(event.get("message") or event.get("note") or "")
    reason = str(event.get("reason") or "")
    source = event_source(event).lower()
    if reason == "NotTriggerScaleUp" or (source == CLUSTER_AUTOSCALER and "didn't trigger scale-up" in message):
        return parse_cluster_autoscaler(message)
    if reason == "FailedScheduling" and (source == KARPENTER or message.startswith(_KARPENTER_HEAD)):
        return parse_karpenter(message)
    return None


def newest_refusal(events: Iterable[Obj]) -> tuple[ScaleUpRefusal, Obj] | None:
    """The newest autoscaler refusal on a pod, unless a later event says a node is coming."""
    relevant: list[tuple[Obj, ScaleUpRefusal | None]] = []
    for event in events:
        if not isinstance(event, Mapping):
            continue
        if str(event.get("reason") or "") in PROGRESS_REASONS:
            relevant.append((event, None))
            continue
        refusal = parse_autoscaler_event(event)
        if refusal is not None:
            relevant.append((event, refusal))
    if not relevant:
        return None
    event, refusal = max(relevant, key=lambda pair: event_time(pair[0]))
    return (refusal, event) if refusal is not None else None


#: node labels that name the node group / pool a node belongs to, per platform
NODE_GROUP_LABELS: tuple[str, ...] = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "karpenter.sh/nodepool",
    "karpenter.sh/provisioner-name",
    "tke.cloud.tencent.com/nodepool-id",
    "cluster.x-k8s.io/deployment-name",
    "node.kubernetes.io/nodegroup",
)


def node_group(node: Obj) -> str | None:
    """The node group a node belongs to, from the first group label it carries."""
    labels = labels_of(node)
    for key in NODE_GROUP_LABELS:
        if labels.get(key):
            return str(labels[key])
    return None


__all__ = [
    "CLUSTER_AUTOSCALER",
    "KARPENTER",
    "NODE_GROUP_LABELS",
    "GroupReason",
    "ScaleUpRefusal",
    "newest_refusal",
    "karpenter_shortfall",
    "node_group",
    "parse_autoscaler_event",
    "parse_cluster_autoscaler",
    "parse_karpenter",
]
