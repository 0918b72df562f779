"""Required pod affinity / anti-affinity that keeps the pod off the nodes it could otherwise use.

The scheduler says "N node(s) didn't match pod affinity rules"; this names the pods a rule is
about, the topology it compares and where those pods run, computed from the pod's
``spec.affinity.podAffinity``/``podAntiAffinity``, the existing pods' anti-affinity and the pods
the bot read. It is the cause when no candidate node (one offering the GPU resources the pod
asks) survives the rules; otherwise it only narrows the choice (role ``partial``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.pod_affinity import AffinityResult
from bot.kube.resources import pod_gpu_requests
from bot.kube.scheduling import POD_AFFINITY_CATEGORIES, ParsedSchedulingMessage
from bot.kube.selectors import selector_text


class SchedPodAffinity(TypedDict):
    pod: str
    rule: str
    what: str
    reason: str
    nodes: str
    count: int


SCHED_POD_AFFINITY = Code("SCHED_POD_AFFINITY", SchedPodAffinity)

_RULE_WORDS = {
    "pod_affinity": "its required pod affinity",
    "pod_anti_affinity": "its required pod anti-affinity",
    "existing_anti_affinity": "other pods' anti-affinity",
}


def _message_share(msg: ParsedSchedulingMessage | None) -> tuple[set[str], int]:
    """The pod-affinity categories the scheduler named, and how many nodes it blamed on them."""
    if msg is None:
        return set(), 0
    reasons = [r for r in msg.reasons if r.category in POD_AFFINITY_CATEGORIES]
    return {r.category for r in reasons}, max((r.count for r in reasons), default=0)


def _what(result: AffinityResult, candidates: list[str]) -> str:
    """The binding rule in words: what it needs and where that is."""
    refusing = [t for t in result.terms if any(not t.allows.get(n, True) for n in candidates)]
    if not refusing:
        return "the scheduler blames inter-pod rules, but the pods behind them could not be identified"
    tr = refusing[0]
    term = tr.term
    places = sorted({w.split(" on ", 1)[1].split(" (", 1)[0] for w in tr.where if " on " in w})
    where = f"on {', '.join(places[:3])}" if places else "no such pod runs"
    if tr.origin == "existing":
        text = f"{term.owner} ({where}) keeps matching pods out of its {term.topology_key}"
    elif term.kind == "affinity":
        text = f"it must share {term.topology_key} with {selector_text(term.selector)} ({where})"
    else:
        text = f"it must not share {term.topology_key} with {selector_text(term.selector)} ({where})"
    return text


def _verdict(allowed: list[str], facts: Facts) -> str:
    """What the rules leave, short enough for a title."""
    if not allowed:
        asks = ", ".join(sorted(pod_gpu_requests(facts.pending_pod or {})))
        return f"no node offering {asks} qualifies" if asks else "no node qualifies"
    more = f" and {len(allowed) - 1} more" if len(allowed) > 1 else ""
    return f"only {allowed[0]}{more} {'qualify' if more else 'qualifies'}"


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_POD_AFFINITY naming the terms, the pods they match and the nodes left."""
    pod = facts.pending_pod
    if pod is None:
        return
    msg = facts.events.scheduling[0] if facts.events.scheduling else None
    blamed, blamed_nodes = _message_share(msg)
    result = facts.pod_affinity
    candidates = sorted(facts.candidates)
    refused = [n for n in candidates if result is not None and not result.allows(n)]
    if not refused and not blamed:
        return
    allowed = [n for n in candidates if result is None or result.allows(n)]
    categories = (result.categories if result is not None and refused else set()) or blamed
    rule = " and ".join(_RULE_WORDS[c] for c in sorted(categories) if c in _RULE_WORDS) or "inter-pod affinity"
    evidence: list[str] = []
    if msg is not None and blamed:
        evidence.append(f"scheduler: {msg.raw[:600]}")
    if result is not None:
        for term in result.terms:
            evidence.append(term.describe())
            evidence += [f"  matching pod: {w}" for w in term.where[:10]]
            if not term.where and term.origin == "own":
                evidence.append("  no running pod matches it" + (
                    " (the pod matches its own terms, so as the first of its group it may go anywhere)"
                    if result.first_of_group else ""))
        evidence += [f"{n}: {'; '.join(result.refusals[n])}" for n in refused[:15]]
    if refused:
        role = "" if not allowed else "partial"
        reason = _what(result, candidates) if result is not None else ""
        what = _verdict(allowed, facts)
    else:
        # The scheduler says so but the bot could not reproduce it (cross-namespace terms it did not
        # read, pods it could not list): trust the count.
        total = msg.total_nodes if msg is not None and msg.total_nodes else 0
        role = "" if total and blamed_nodes >= total else "partial"
        reason = "the pods behind the rule could not be identified from what the bot read"
        what = f"{blamed_nodes} node(s) ruled out" if blamed_nodes else "nodes ruled out"
        evidence.append("could not tell which pods the rule is about (they may be in namespaces the bot did not read)")
    yield SCHED_POD_AFFINITY.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "rule": rule,
            "what": what,
            "reason": reason,
            "nodes": ", ".join(allowed[:10]) or "none",
            "count": len(refused),
        },
        role=role,
        evidence=evidence,
    )


CHECK = Check(
    name="sched.pod_affinity",
    reads=("pending_pod", "events", "candidates", "pod_affinity"),
    emits=(SCHED_POD_AFFINITY,),
    run=run,
)
