"""Read kube-scheduler FailedScheduling messages into structured reasons.

The scheduler's message is the best evidence of why a pod is Pending, but its wording changed
across releases (taint wordings, PreFilter messages, the ``..`` of 1.26, the preemption tail)
and the qGPU extender adds its own tuples. This module parses every known shape into
``Reason`` objects with a category the runbooks route on, and keeps the raw text so nothing is
lost when a reason is not recognised.

It never performs I/O and never raises on any input text: an unknown message comes back with
category ``unrecognised`` so the report can show it verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.kube.resources import is_gpu_resource

CATEGORIES = frozenset({
    "insufficient_gpu", "insufficient_other", "untolerated_taint", "node_selector", "unschedulable",
    "qgpu_alloc_failed", "too_many_pods", "volume", "unknown_conditions", "not_ready", "vgpu_unregistered",
    "unrecognised", "pod_affinity", "pod_anti_affinity", "existing_anti_affinity", "topology_spread",
    "dra_claims",
})
#: the inter-pod affinity categories (InterPodAffinity plugin): computed from the pods themselves
POD_AFFINITY_CATEGORIES = frozenset({"pod_affinity", "pod_anti_affinity", "existing_anti_affinity"})
#: event sources that record ``FailedScheduling`` on a pod without being a kube-scheduler
#: (Karpenter reports its own provisioning failures under that reason)
NOT_SCHEDULERS = frozenset({"karpenter"})

#: Taints the node lifecycle controller sets for node health; a toleration is not the fix.
NOT_READY_TAINTS = frozenset({
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/out-of-disk",
    "node.cloudprovider.kubernetes.io/uninitialized",
})
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class TaintRef:
    """A taint as the scheduler names it (``{key: value}``); the effect is not in the message."""

    key: str
    value: str

    def matches(self, taint: Mapping[str, Any]) -> bool:
        """True when a node taint dict is the one this message names."""
        return taint.get("key") == self.key and str(taint.get("value") or "") == self.value


@dataclass(frozen=True)
class CardState:
    """One card's tuple in a qGPU ``failed to allocate`` message."""

    #: qgpu-core already allocated on the card, in percent (confident reading)
    used_core: int
    #: second field, shown raw (the field notes guess "used cards"; it is not confirmed)
    second: int
    #: third field, shown raw (the field notes guess "total cards"; 16 is also the qGPU device limit)
    third: int
    #: 100 - used_core
    free_core: int


@dataclass(frozen=True)
class QgpuAllocFailure:
    """``failed to allocate (core, memory, cards) on (card)(card)…`` decoded."""

    requested_core: int
    requested_memory: int
    requested_cards: int
    cards: list[CardState] = field(default_factory=list)

    def fitting_cards(self) -> list[int]:
        """Indexes of cards with enough free core for the request (whole cards need 100% free)."""
        need = min(self.requested_core, 100) if self.requested_core else 0
        return [i for i, card in enumerate(self.cards) if card.free_core >= need]

    def describe(self) -> str:
        """The tuple in words: what was asked, each card's core use, and whether any card fits."""
        cards_word = "card" if self.requested_cards == 1 else "cards"
        parts = [
            f"asks {self.requested_core}% core, {self.requested_memory} GiB memory "
            f"on {self.requested_cards} {cards_word}"
        ]
        for index, card in enumerate(self.cards):
            parts.append(
                f"card {index}: {card.used_core}% core used ({card.free_core}% free)"
                f" — fields 2-3 raw: {card.second}, {card.third}"
            )
        need = min(self.requested_core, 100)
        fitting = self.fitting_cards()
        wanted = max(self.requested_cards, self.requested_core // 100, 1)
        if not self.cards:
            verdict = "no card state was reported"
        elif len(fitting) < wanted:
            verdict = (
                f"no card has {need}% free" if not fitting
                else f"only {len(fitting)} card(s) have {need}% free, {wanted} needed"
            )
        else:
            verdict = (
                f"card(s) {', '.join(map(str, fitting))} have {need}% core free, so core is not what "
                "blocks it (memory or the device count may)"
            )
        return "; ".join(parts) + "; " + verdict


@dataclass(frozen=True)
class Reason:
    """One histogram entry: ``count`` nodes failed for ``text``."""

    #: how many nodes failed for this reason; 0 when the text carried no count
    count: int
    #: the reason without its count, whitespace collapsed, trailing period removed
    text: str
    #: one of CATEGORIES
    category: str
    #: the resource of an ``Insufficient <resource>`` reason
    resource: str | None = None
    #: the taint a taint reason names (None for ``had taints that the pod didn't tolerate``)
    taint: TaintRef | None = None
    #: the decoded qGPU extender tuple
    qgpu: QgpuAllocFailure | None = None


@dataclass(frozen=True)
class ParsedSchedulingMessage:
    """A FailedScheduling message taken apart; ``raw`` is always the text as given."""

    #: N in ``0/N nodes are available`` (0 for ``no nodes available``), None when absent
    total_nodes: int | None
    reasons: list[Reason]
    #: text after ``preemption:``, trailing periods removed
    preemption: str | None
    #: a PreFilter message that replaced the histogram (``pod has unbound immediate …``)
    prefilter: str | None
    raw: str
    #: category of ``prefilter`` (``volume``, ``node_selector``… or ``unrecognised``)
    prefilter_category: str | None = None

    @property
    def recognised(self) -> bool:
        """False when nothing in the message matched a known shape: show it verbatim."""
        return self.total_nodes is not None or self.prefilter_category not in (None, "unrecognised") or any(
            r.category != "unrecognised" for r in self.reasons
        )

    @property
    def categories(self) -> set[str]:
        found = {r.category for r in self.reasons}
        if self.prefilter_category:
            found.add(self.prefilter_category)
        return found

    def by_category(self, category: str) -> list[Reason]:
        return [r for r in self.reasons if r.category == category]

    def preemption_parsed(self) -> ParsedSchedulingMessage | None:
        """The preemption tail parsed as a message of its own (its own ``0/N`` histogram)."""
        return parse_scheduling_message(self.preemption) if self.preemption else None


_HEAD = re.compile(r"(\d{1,9})\s*/\s*(\d{1,9}) nodes? (?:are|is) available:?")
_NO_NODES = re.compile(r"no nodes available to schedule pods", re.IGNORECASE)
_COMBINED = re.compile(r"^\s*\(combined from similar events\):\s*")
_PREEMPTION = re.compile(r"(?:^|[.\s])preemption:\s*")
_COUNTED = re.compile(r"(\d{1,9})\s+(\S.*)", re.DOTALL)
_ITEM_START = re.compile(r"[ \t\r\n]*\d{1,9}[ \t]+\S")
_TAINT_BRACES = re.compile(r"\{([^{}:]*):\s?([^{}]*)\}")
_INSUFFICIENT = re.compile(r"Insufficient\s+(\S+)")
_QGPU = re.compile(r"failed to allocate\s*\(\s*(\d{1,9})\s*,\s*(\d{1,9})\s*,\s*(\d{1,9})\s*\)\s*on\s*")
_QGPU_CARD = re.compile(r"\(\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*\)")

#: (pattern searched in the reason text, category), first match wins; order matters where
#: texts overlap (taints before node conditions, qGPU before everything).
REASON_TABLE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"failed to allocate"), "qgpu_alloc_failed"),
    # InterPodAffinity, 1.18-1.34 wordings (before 1.21 the generic "pod affinity/anti-affinity"
    # came beside the specific reason, so both counted the same nodes)
    (re.compile(r"didn't satisfy existing pods anti-affinity|ExistingPodsAntiAffinityRulesNotMatch"),
     "existing_anti_affinity"),
    (re.compile(r"didn't match pod anti-affinity"), "pod_anti_affinity"),
    (re.compile(r"didn't match pod affinity|MatchInterPodAffinity"), "pod_affinity"),
    # HAMi's extender: the node has no card registration (hami.io/node-nvidia-register)
    (re.compile(r"\bnode unregistered\b"), "vgpu_unregistered"),
    (re.compile(r"didn't match pod topology spread constraints|PodTopologySpread"), "topology_spread"),
    # DynamicResources: the pod's ResourceClaims (resource.k8s.io) cannot be allocated or do not exist yet
    (re.compile(r"cannot allocate all claims|resourceclaim|resource claim|dynamic resource|device class",
                re.IGNORECASE), "dra_claims"),
    (re.compile(r"had (?:untolerated )?taints?\b"), "untolerated_taint"),
    (re.compile(r"didn't match (?:Pod's )?node (?:affinity|selector)"
                r"|didn't satisfy plugin\(?s?\)? \[?NodeAffinity", re.IGNORECASE), "node_selector"),
    (re.compile(r"were unschedulable|unschedulable node"), "unschedulable"),
    (re.compile(r"had unknown conditions"), "unknown_conditions"),
    (re.compile(r"Too many pods"), "too_many_pods"),
    (re.compile(r"volume|PersistentVolumeClaim|persistent volume|pvc|\bdisk\b(?! pressure)", re.IGNORECASE),
     "volume"),
    (re.compile(r"not ready|were not ready|(?:disk|memory|pid) pressure|out of disk|network unavailable",
                re.IGNORECASE), "not_ready"),
)


def _category(text: str) -> str:
    """The category of a reason text by the first matching table row (Insufficient first)."""
    insufficient = _INSUFFICIENT.search(text)
    if insufficient is not None:
        return "insufficient_gpu" if is_gpu_resource(_resource(insufficient)) else "insufficient_other"
    for pattern, category in REASON_TABLE:
        if pattern.search(text):
            return category
    return "unrecognised"


def _resource(match: re.Match[str]) -> str:
    return match.group(1).rstrip(".,;")


def _taint_category(key: str) -> str:
    if key == UNSCHEDULABLE_TAINT_KEY:
        return "unschedulable"
    if key in NOT_READY_TAINTS:
        return "not_ready"
    return "untolerated_taint"


def decode_qgpu(text: str) -> QgpuAllocFailure | None:
    """Decode ``failed to allocate (100, 0, 1) on (80, 11, 16)(90, 11, 16)``; None if it is not one."""
    match = _QGPU.search(text)
    if match is None:
        return None
    core, memory, cards = (int(g) for g in match.groups())
    states = []
    position = match.end()
    while (card := _QGPU_CARD.match(text, position)) is not None:
        used, second, third = (int(g) for g in card.groups())
        states.append(CardState(used_core=used, second=second, third=third, free_core=100 - used))
        position = card.end()
        while position < len(text) and text[position] in " \t":
            position += 1
    return QgpuAllocFailure(core, memory, cards, states)


def classify_reason(count: int, text: str) -> Reason:
    """One histogram reason (without its count) turned into a Reason."""
    category = _category(text)
    if category in ("insufficient_gpu", "insufficient_other"):
        insufficient = _INSUFFICIENT.search(text)
        return Reason(count, text, category, resource=_resource(insufficient) if insufficient else None)
    if category == "qgpu_alloc_failed":
        return Reason(count, text, category, qgpu=decode_qgpu(text))
    if category == "untolerated_taint":
        braces = _TAINT_BRACES.search(text)
        if braces is None:
            return Reason(count, text, category)
        taint = TaintRef(braces.group(1).strip(), braces.group(2).strip())
        return Reason(count, text, _taint_category(taint.key), taint=taint)
    return Reason(count, text, category)


def split_histogram(body: str) -> list[str]:
    """The ``<count> <reason>`` items of a histogram (see ``_split_items``); cluster-autoscaler's
    NotTriggerScaleUp reasons use the same shape."""
    return _split_items(body)


def _split_items(body: str) -> list[str]:
    """Split a histogram at ", " or line breaks that start a new ``<count> <reason>`` item.

    Commas inside ``{…}`` or ``(…)`` never split, and neither does a comma not followed by a
    count (``had taint {k: v}, that the pod didn't tolerate`` is one reason).
    """
    items: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(body):
        if char in "{(":
            depth += 1
        elif char in "})":
            depth = max(depth - 1, 0)
        elif depth == 0 and char in ",\n" and _ITEM_START.match(body, index + 1):
            items.append(body[start:index])
            start = index + 1
    items.append(body[start:])
    return [item.strip(" \t\r\n,") for item in items if item.strip(" \t\r\n,")]


def _trim(text: str) -> str:
    return text.strip().rstrip(".").strip()


def _parse_histogram(body: str) -> list[Reason]:
    reasons = []
    for item in _split_items(body):
        flat = " ".join(item.split())
        counted = _COUNTED.fullmatch(flat)
        if counted is None:
            reasons.append(classify_reason(0, flat))
        else:
            reasons.append(classify_reason(int(counted.group(1)), _trim(counted.group(2))))
    return reasons


def parse_scheduling_message(message: str) -> ParsedSchedulingMessage:
    """Parse one FailedScheduling message of any known kube-scheduler or qGPU extender format."""
    raw = message if isinstance(message, str) else str(message)
    text = _COMBINED.sub("", raw).replace("\r\n", "\n").strip()
    preemption: str | None = None
    split = _PREEMPTION.search(text)
    if split is not None:
        preemption = _trim(" ".join(text[split.end():].split())) or None
        text = text[: split.start()]
    head = _HEAD.search(text)
    if head is None:
        body = _trim(" ".join(text.split()))
        if _NO_NODES.search(body):
            return ParsedSchedulingMessage(0, [], preemption, body, raw, prefilter_category="not_ready")
        if _ITEM_START.match(body):
            # A histogram pasted without its "0/N nodes are available:" head.
            return ParsedSchedulingMessage(None, _parse_histogram(body), preemption, None, raw)
        category = _category(body) if body else "unrecognised"
        if category in ("qgpu_alloc_failed", "insufficient_gpu", "insufficient_other"):
            return ParsedSchedulingMessage(None, [classify_reason(0, body)], preemption, None, raw)
        if category == "unrecognised" or not body:
            reasons = [Reason(0, body, "unrecognised")] if body else []
            return ParsedSchedulingMessage(None, reasons, preemption, None, raw)
        return ParsedSchedulingMessage(None, [], preemption, body, raw, prefilter_category=category)
    total = int(head.group(2))
    body = _trim(text[head.end():])
    if not body or _ITEM_START.match(body):
        return ParsedSchedulingMessage(total, _parse_histogram(body), preemption, None, raw)
    prefilter = " ".join(body.split())
    category = _category(prefilter)
    return ParsedSchedulingMessage(total, [], preemption, prefilter, raw, prefilter_category=category)


_TIME_FIELDS = ("lastTimestamp", "eventTime", "series.lastObservedTime", "firstTimestamp",
                "metadata.creationTimestamp")
_EPOCH = datetime.min.replace(tzinfo=UTC)


def _lookup(event: Mapping[str, Any], dotted: str) -> Any:
    value: Any = event
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def event_time(event: Mapping[str, Any]) -> datetime:
    """When an event last happened; the oldest possible time when it carries none."""
    for name in _TIME_FIELDS:
        value = _lookup(event, name)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, str) and value:
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return _EPOCH


def event_source(event: Mapping[str, Any]) -> str:
    """Who recorded an event: ``source.component``, else the events.k8s.io reporting fields."""
    source = event.get("source")
    component = source.get("component") if isinstance(source, Mapping) else None
    return str(component or event.get("reportingComponent") or event.get("reportingController") or "")


def is_scheduler_event(event: Mapping[str, Any]) -> bool:
    """A FailedScheduling event from a scheduler, not from a provisioner that borrows the reason."""
    if event.get("reason") != "FailedScheduling":
        return False
    if event_source(event).lower() in NOT_SCHEDULERS:
        return False
    return not str(event.get("message") or event.get("note") or "").startswith("Failed to schedule pod, ")


def failed_scheduling_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The schedulers' FailedScheduling events, newest first (Karpenter's are left out)."""
    return [e for _, e in timed_scheduling_events(events)]


def timed_scheduling_events(events: Iterable[Mapping[str, Any]]) -> list[tuple[datetime, Mapping[str, Any]]]:
    """``failed_scheduling_events`` with each one's ``event_time``, worked out once (its callers
    compare the times again, over as many as 20,000 events of one pod)."""
    timed = [(event_time(e), e) for e in events if isinstance(e, Mapping) and is_scheduler_event(e)]
    timed.sort(key=_first, reverse=True)  # stable: events of one moment keep their order
    return timed


def _first(pair: tuple[datetime, Mapping[str, Any]]) -> datetime:
    return pair[0]


def parse_event_messages(events: list[dict[str, Any]]) -> list[ParsedSchedulingMessage]:
    """Parse the FailedScheduling events (``message`` or events.k8s.io ``note``), newest first."""
    return [
        parse_scheduling_message(str(e.get("message") or e.get("note") or ""))
        for e in failed_scheduling_events(events)
    ]
