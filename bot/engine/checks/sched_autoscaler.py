"""The node autoscaler will not add a node for the pod: cluster-autoscaler's NotTriggerScaleUp or
Karpenter's own FailedScheduling, with the node groups it considered and why each was refused.

cluster-autoscaler only counts node groups per reason; the groups are named here from the nodes'
group labels (EKS, GKE, AKS, Karpenter, TKE...), and for each group that has nodes the bot
checks itself whether a new node like them could take the pod. Groups scaled to zero have no
nodes to read: the autoscaler's status ConfigMap lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import event_time, pod_ref
from bot.engine.facts import Facts
from bot.kube.affinity import node_matches
from bot.kube.autoscaler import CLUSTER_AUTOSCALER, ScaleUpRefusal, newest_refusal, node_group
from bot.kube.objects import Obj, labels_of
from bot.kube.quota import fmt_quantity
from bot.kube.resources import is_gpu_resource, parse_quantity, pod_requests
from bot.kube.scheduling import NOT_READY_TAINTS
from bot.kube.taints import taint_str, untolerated_taints


class AutoscalerNoScaleUp(TypedDict):
    pod: str
    name: str
    count: int
    nodes: str
    what: str


AUTOSCALER_NO_SCALE_UP = Code("AUTOSCALER_NO_SCALE_UP", AutoscalerNoScaleUp)

MAX_GROUPS = 12

_CATEGORY_WORDS = {
    "insufficient_gpu": "a new node of the group, as the autoscaler models it, would not have enough of it",
    "insufficient_other": "a new node of the group would not have enough of it",
    "node_selector": "the group's nodes do not carry the labels the pod selects",
    "untolerated_taint": "the group's nodes carry a taint the pod does not tolerate",
    "max_size": "the group is already at its maximum size",
    "cluster_limit": "the cluster-wide resource limit of the autoscaler is reached",
    "backoff": "the group is backing off after a failed scale-up (often the cloud is out of that instance type)",
    "not_registered": "the group's nodes have not registered",
    "no_instance_type": "no instance type the NodePool allows has these resources",
    "requirements": "the pod's requirements conflict with the NodePool's",
    "taint": "the NodePool's taints are not tolerated",
    "limits": "the NodePool's resource limits are used up",
    "pod_affinity": "the pod's affinity rules cannot be met on a new node",
    "pod_anti_affinity": "the pod's anti-affinity rules cannot be met on a new node",
}


#: reasons that come from the pod's own spec (the scheduler's findings name the fix): the
#: autoscaler's refusal then only confirms that no new node gets around them
_SPEC_REASONS = frozenset({
    "node_selector", "untolerated_taint", "pod_affinity", "pod_anti_affinity", "existing_anti_affinity",
    "requirements", "taint",
})


_SHORTFALL_WORDS = {
    "offering": "instance types that match and are big enough exist, but none is on offer in the allowed zones "
                "and capacity types (sold out, or excluded by the NodePool's zone/capacity-type requirements)",
    "requirements": "the instance types big enough for the pod are excluded by the NodePool's requirements",
    "resources": "no instance type the NodePool allows is big enough (for a GPU request: none of them has that GPU)",
}


_SHORT_WORDS = {
    "offering": "fitting types not on offer",
    "requirements": "types that fit are excluded by its requirements",
    "resources": "no allowed type is big enough",
}


def _alloc(node: Obj, resource: str) -> Decimal | None:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except (ValueError, ArithmeticError):
        return None


def _group_verdict(pod: Obj, node: Obj) -> str:
    """Why a fresh node like ``node`` could (not) take the pod, in words."""
    reasons = []
    match = node_matches(pod, node)
    if not match.ok:
        reasons.append("node selector: " + "; ".join(match.mismatches[:2]))
    taints = [
        taint_str(t) for t in untolerated_taints(pod, node, include_unschedulable=False)
        if t.get("key") not in NOT_READY_TAINTS
    ]
    if taints:
        reasons.append("untolerated taint " + ", ".join(taints))
    for resource, want in sorted(pod_requests(pod).items()):
        have = _alloc(node, resource)
        if have is None and is_gpu_resource(resource):
            reasons.append(f"its nodes offer no {resource}")
        elif have is not None and have < want:
            reasons.append(
                f"a whole node has {fmt_quantity(resource, have)} {resource} allocatable, "
                f"the pod asks {fmt_quantity(resource, want)}"
            )
    return "; ".join(reasons) if reasons else "a new node like these would fit the pod"


def _groups(facts: Facts, pod: Obj) -> list[str]:
    by_group: dict[str, list[str]] = {}
    for name, node in sorted(facts.nodes.items()):
        group = node_group(node)
        if group:
            by_group.setdefault(group, []).append(name)
    lines = []
    for group, names in sorted(by_group.items())[:MAX_GROUPS]:
        sample = facts.nodes[names[0]]
        labels = labels_of(sample)
        kind = labels.get("node.kubernetes.io/instance-type") or labels.get("beta.kubernetes.io/instance-type")
        what = f"{len(names)} node(s)" + (f", {kind}" if kind else "")
        lines.append(f"group {group} ({what}): {_group_verdict(pod, sample)}")
    return lines


def _summary(refusal: ScaleUpRefusal) -> str:
    if not refusal.reasons:
        return "it found no node group whose new node would fit the pod (no reason given)"
    parts = []
    for r in refusal.reasons:
        who = r.group or f"{r.count} group(s)"
        text = r.text
        if r.category == "no_instance_type":
            text = " and ".join(_SHORT_WORDS[d] for d in r.shortfall) or "no instance type fits"
        elif r.category == "requirements":
            text = "requirements conflict with the pod's"
        parts.append(f"{who}: {text}")
    joined = "; ".join(parts)
    if len(joined) <= 90 or len(parts) == 1:
        return joined
    more = "NodePool(s)" if refusal.source != CLUSTER_AUTOSCALER else "reason(s)"
    return f"{parts[0]}; {len(parts) - 1} more {more} in the evidence"


def run(facts: Facts) -> Iterator[Detection]:
    """AUTOSCALER_NO_SCALE_UP from the newest refusal on the pod (unless a node is since on its way)."""
    pod = facts.pending_pod
    if pod is None:
        return
    found = newest_refusal(facts.events.pod)
    if found is None:
        return
    refusal, event = found
    count = event.get("count")
    times = f" x{count}" if count else ""
    when = event_time(dict(event)) or "?"
    evidence = [f"{refusal.source} ({event.get('reason')}{times}, last {when}): {refusal.raw[:1500]}"]
    for reason, line in zip(refusal.reasons, refusal.lines(), strict=True):
        if reason.category == "no_instance_type":
            meaning = [_SHORTFALL_WORDS[d] for d in reason.shortfall] or [_CATEGORY_WORDS["no_instance_type"]]
            evidence.append(f'  NodePool "{reason.group}": no instance type it allows can take the pod: '
                            + "; ".join(meaning))
        else:
            words = _CATEGORY_WORDS.get(reason.category)
            evidence.append(f"  {line}" + (f" ({words})" if words else ""))
        if reason.resources:
            asked = ", ".join(f"{k}={v}" for k, v in sorted(reason.resources.items()))
            evidence.append(f"    asked of one node (pod + DaemonSets): {asked}")
        if reason.requirements:
            evidence.append(f"    NodePool requirements: {reason.requirements[:400]}")
        if reason.why:
            evidence.append(f"    verdict: {reason.why}")
    groups = _groups(facts, pod)
    evidence += groups
    if refusal.source == CLUSTER_AUTOSCALER:
        evidence.append(
            "node groups scaled to zero have no nodes to read here; the autoscaler lists every group with "
            "its min/max/current size in kubectl -n kube-system get configmap cluster-autoscaler-status -o yaml"
        )
    names = [r.group for r in refusal.reasons if r.group] or [g.split(" ", 2)[1] for g in groups]
    considered = refusal.groups_considered or len(names)
    if considered > len(names):
        names.append(f"{considered - len(names)} group(s) without nodes")
    echo = bool(refusal.reasons) and all(r.category in _SPEC_REASONS for r in refusal.reasons)
    yield AUTOSCALER_NO_SCALE_UP.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "name": "Karpenter" if refusal.source != CLUSTER_AUTOSCALER else "cluster-autoscaler",
            "count": considered,
            "nodes": ", ".join(names[: MAX_GROUPS + 1]) or "none visible",
            "what": _summary(refusal),
        },
        role="echo" if echo else "",
        evidence=evidence,
    )


CHECK = Check(
    name="sched.autoscaler",
    reads=("pending_pod", "events", "nodes"),
    emits=(AUTOSCALER_NO_SCALE_UP,),
    run=run,
)
