"""Does a DaemonSet place a pod on a node, and how is that pod doing.

A device plugin (or any GPU Operator operand) is a DaemonSet: when its pod is not on a GPU node,
or is there but crash-looping, the node advertises nothing and every GPU pod waits. The
DaemonSet controller schedules a pod on a node only when the pod template's nodeSelector and
required node affinity admit the node and its tolerations (plus the ones the controller adds
itself) cover the node's NoSchedule/NoExecute taints. This module recomputes that verdict and
reads the pod's state the way a person would in ``kubectl describe``: which container, which
state, and the message its last run left behind.

It never performs I/O and never mutates the dicts it is given.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.kube.affinity import node_matches
from bot.kube.objects import labels_of, meta_of, name_of
from bot.kube.pod_status import classify, keeps_failing
from bot.kube.selectors import selector_matches
from bot.kube.taints import taint_str, untolerated_taints

Obj = Mapping[str, Any]

#: Tolerations the DaemonSet controller adds to every pod it creates
#: (``pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations``): a cordon, node pressure or a
#: node that is not ready never keeps a DaemonSet pod away.
CONTROLLER_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
#: added for host-network pods only
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                           "effect": "NoSchedule"}

#: how much of a termination message is quoted (the tail: the last lines say why it died)
QUOTE_CHARS = 400
QUOTE_LINES = 4


@dataclass(frozen=True)
class Admission:
    """Whether a DaemonSet's pod template admits a node, and why not."""

    ok: bool
    #: one line per reason: a label the selector wants, a taint nobody tolerates
    reasons: tuple[str, ...] = ()
    #: labels the template's selection needs and the node lacks (or has with another value)
    labels: tuple[str, ...] = ()
    #: how many other required-affinity terms would admit the node instead (alternatives)
    alternatives: int = 0

    def wants(self) -> str:
        """The missing labels in a few words: ``a=true`` or ``a=true or 2 alternatives``."""
        text = ", ".join(self.labels)
        return text + (f" or {self.alternatives} alternative(s)" if text and self.alternatives else "")


@dataclass(frozen=True)
class PodHealth:
    """A component pod's state in the words ``kubectl get pods`` and ``describe`` use."""

    #: Running and Ready
    ok: bool
    #: kubectl's STATUS column (``CrashLoopBackOff``, ``Init:0/1``, ``Pending``, ``Running``)
    status: str
    #: the container the state comes from (an init container while initialising)
    container: str = ""
    #: the container keeps failing (restarts, CrashLoopBackOff, Error)
    crashing: bool = False
    #: still initialising in an init container (typically waiting for another component)
    initialising: bool = False
    #: the quote: the last termination message, else reason and exit code, else the waiting message
    message: str = ""
    restarts: int = 0
    #: the pod is not bound to a node yet: the scheduler's reason, when it gave one
    unscheduled: str = ""
    terminating: bool = False


@dataclass(frozen=True)
class Placement:
    """What a DaemonSet has on one node: admitted or not, its pod (if any) and that pod's health."""

    daemonset: str
    namespace: str
    node: str
    admission: Admission
    pod: Obj | None = None
    health: PodHealth | None = None

    @property
    def ok(self) -> bool:
        return self.health is not None and self.health.ok

    @property
    def pod_name(self) -> str:
        return name_of(self.pod)

    @property
    def state(self) -> str:
        """``not-scheduled`` (not admitted, no pod), ``no-pod`` (admitted, no pod), else the pod's status."""
        if self.pod is None:
            return "no-pod" if self.admission.ok else "not-scheduled"
        return self.health.status if self.health is not None else "Unknown"


def _labels(obj: Obj) -> dict[str, str]:
    raw = labels_of(obj)
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def template_spec(ds: Obj) -> Mapping[str, Any]:
    """The pod template's spec (``{}`` for a malformed object)."""
    template = (ds.get("spec") or {}).get("template") or {}
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def daemon_tolerations(ds: Obj) -> list[Mapping[str, Any]]:
    """The template's tolerations plus those the DaemonSet controller adds."""
    spec = template_spec(ds)
    own = [t for t in spec.get("tolerations") or [] if isinstance(t, Mapping)]
    extra: list[Mapping[str, Any]] = list(CONTROLLER_TOLERATIONS)
    if spec.get("hostNetwork"):
        extra.append(HOST_NETWORK_TOLERATION)
    return [*own, *extra]


def _term_wants(term: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """``key=value`` (or ``key``) of one nodeSelectorTerm's In/Exists requirements the node misses."""
    out = []
    for expr in term.get("matchExpressions") or []:
        key, op, values = str(expr.get("key", "")), expr.get("operator"), [str(v) for v in expr.get("values") or []]
        if op == "In" and labels.get(key) not in values:
            out.append(f"{key}={values[0]}" if len(values) == 1 else f"{key} in ({', '.join(values)})")
        elif op == "Exists" and key not in labels:
            out.append(key)
    return out


def selection_wants(spec: Mapping[str, Any], node: Obj) -> tuple[tuple[str, ...], int]:
    """What the template's node selection wants and the node lacks.

    Returns (labels, alternatives): the nodeSelector pairs the node misses plus what the first
    unmet required-affinity term misses, and how many other terms would also do (the terms of a
    required node affinity are alternatives: any one of them admits the node).
    """
    labels = _labels(node)
    out = [f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items() if labels.get(str(k)) != str(v)]
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, Mapping)]
    unmet = [w for w in (_term_wants(t, labels) for t in terms) if w]
    if terms and len(unmet) == len(terms):
        out += unmet[0]
        return tuple(dict.fromkeys(out)), len(unmet) - 1
    return tuple(dict.fromkeys(out)), 0


def daemonset_admits(ds: Obj, node: Obj) -> Admission:
    """Whether the DaemonSet controller would run a pod of ``ds`` on ``node``.

    The pod template's nodeSelector and required node affinity must admit the node (the same
    rules as a pod's, ``bot.kube.affinity``), and every NoSchedule/NoExecute taint must be
    tolerated by the template or by the controller's own tolerations. A cordon never blocks.
    """
    spec = template_spec(ds)
    reasons: list[str] = []
    match = node_matches({"spec": spec}, node)
    if not match.ok:
        reasons.extend(match.mismatches)
    probe = {"spec": {"tolerations": daemon_tolerations(ds)}}
    for taint in untolerated_taints(probe, node, include_unschedulable=False):
        reasons.append(f"taint {taint_str(taint)} is not tolerated")
    labels, alternatives = selection_wants(spec, node) if not match.ok else ((), 0)
    return Admission(ok=not reasons, reasons=tuple(reasons), labels=labels, alternatives=alternatives)


def owned_by(pod: Obj, ds: Obj) -> bool:
    """``pod`` belongs to ``ds``: by controller reference, else by the DaemonSet's selector."""
    meta = meta_of(ds)
    uid, name = meta.get("uid"), meta.get("name")
    pod_meta = meta_of(pod)
    refs = [r for r in pod_meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
    if pod_meta.get("namespace", "") != meta.get("namespace", ""):
        return False
    if refs:
        # the uid first; the name as well, so a pasted or re-created object whose uids drifted
        # is not mistaken for "the DaemonSet has no pod there"
        return any(r.get("kind") == "DaemonSet" and (r.get("uid") == uid or r.get("name") == name) for r in refs)
    wanted = (ds.get("spec") or {}).get("selector")
    return bool(wanted) and selector_matches(wanted, _labels(pod))


def target_node(pod: Obj) -> str:
    """The node a DaemonSet pod is for: ``spec.nodeName``, else the ``metadata.name`` its
    required node affinity pins (DaemonSet pods are scheduled by the default scheduler)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchFields") or []:
            values = expr.get("values") or []
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def _tail(text: str) -> str:
    lines = [line.rstrip() for line in str(text).splitlines() if line.strip()]
    quote = " | ".join(lines[-QUOTE_LINES:])
    return quote if len(quote) <= QUOTE_CHARS else "…" + quote[-QUOTE_CHARS:]


def _statuses(pod: Obj) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [s for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
            if isinstance(s, Mapping)]


def termination_quote(cs: Mapping[str, Any]) -> str:
    """What a container's last failure said: its termination message (the tail of it), else the
    reason and exit code, else the waiting message. Empty when the container never failed."""
    state = cs.get("state") or {}
    last = (cs.get("lastState") or {}).get("terminated") or {}
    term = state.get("terminated") or {}
    for source in (last, term):
        if source.get("message"):
            return _tail(str(source["message"]))
    waiting = state.get("waiting") or {}
    for source in (last, term):
        if source.get("reason") or source.get("exitCode"):
            code = source.get("exitCode")
            return f"{source.get('reason') or 'terminated'}" + (f", exit code {code}" if code is not None else "")
    if waiting.get("message"):
        return _tail(str(waiting["message"]))
    return ""


def pod_health(pod: Obj) -> PodHealth:
    """The pod's state, whether it is crashing, and the message to quote."""
    state = classify(pod)
    meta = meta_of(pod)
    if not (pod.get("spec") or {}).get("nodeName"):
        scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), {})
        reason = str(scheduled.get("message") or scheduled.get("reason") or "not yet assigned to the node")
        return PodHealth(ok=False, status="Pending", unscheduled=reason, message=_tail(reason),
                         terminating=bool(meta.get("deletionTimestamp")))
    statuses = {str(s.get("name")): s for s in _statuses(pod)}
    container = state.container or ""
    if not container:
        container = next((n for n, s in statuses.items() if not s.get("ready")), "")
    cs = statuses.get(container, {})
    restarts = int(cs.get("restartCount") or 0) if cs else state.restarts
    waiting = ((cs.get("state") or {}).get("waiting") or {}).get("reason", "") if cs else ""
    crashing = keeps_failing(state, waiting=str(waiting), restarts=restarts)
    initialising = state.display_status.startswith("Init:") and not crashing
    ok = state.ready and state.display_status == "Running" and not state.terminating
    message = termination_quote(cs) if cs else ""
    if not message and state.detail and not ok:
        message = _tail(state.detail)
    status = state.display_status
    if status == "Running" and not state.ready:
        status = "Running (not ready)"
    return PodHealth(ok=ok, status=status, container=container, crashing=crashing and not ok,
                     initialising=initialising, message=message if not ok else "", restarts=restarts,
                     terminating=state.terminating)


def _pick(pods: Sequence[Obj]) -> Obj | None:
    """Of several pods for one node (a rollout in progress), the one that is not terminating."""
    live = [p for p in pods if not meta_of(p).get("deletionTimestamp")]
    chosen = live or list(pods)
    return chosen[0] if chosen else None


#: the last few (DaemonSet, pod list) -> its pods by node; holds both objects, so an id is not reused
_BY_NODE: OrderedDict[tuple[int, int], tuple[Obj, Sequence[Obj], int, dict[str, list[Obj]]]] = OrderedDict()
_BY_NODE_KEEP = 8
_BY_NODE_LOCK = threading.Lock()  # the checks of concurrent diagnoses run in worker threads
#: ``sys.getrefcount`` of a list held by nothing but its cache entry (the entry, the call's argument)
_ONLY_HERE = 2


def _owned_by_node(ds: Obj, pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """``ds``'s pods grouped by the node each is for. The checks ask ``placement`` once per node
    and DaemonSet with the same pod list: scanning that list each time made node-status over the
    fleet quadratic (500 GPU nodes: 375,000 ``owned_by`` calls, seconds of a report's CPU), so the
    grouping of one (DaemonSet, list) pair is kept while the pair is reused."""
    if not isinstance(pods, Sequence):
        pods = list(pods)
    key = (id(ds), id(pods))
    with _BY_NODE_LOCK:
        hit = _BY_NODE.get(key)
    if hit is not None and hit[0] is ds and hit[1] is pods and hit[2] == len(pods):
        return hit[3]
    index: dict[str, list[Obj]] = {}
    for p in pods:
        if owned_by(p, ds):
            index.setdefault(target_node(p), []).append(p)
    with _BY_NODE_LOCK:
        _forget_finished()
        _BY_NODE[key] = (ds, pods, len(pods), index)
        while len(_BY_NODE) > _BY_NODE_KEEP:
            _BY_NODE.popitem(last=False)
    return index


def _forget_finished() -> None:
    """Drop the groupings whose pod list only this cache still holds: the report that read it is
    done, and in the long-running bot each kept list is hundreds of full pod objects (measured:
    node-status over 500 nodes grew the process by ~9 MB a run until the cache was full)."""
    for key in [k for k, entry in _BY_NODE.items() if sys.getrefcount(entry[1]) <= _ONLY_HERE]:
        del _BY_NODE[key]


def controller_is_content(ds: Obj) -> bool:
    """The DaemonSet's own status says every node it wants a pod on has one (CURRENT = DESIRED,
    for the spec it last saw). Our reading of the template can admit a node the controller does
    not count (a predicate we do not model, a template we misread); its count is the authority."""
    status = ds.get("status")
    if not isinstance(status, Mapping) or "desiredNumberScheduled" not in status:
        return False  # no status read: nothing to go by
    generation, seen = meta_of(ds).get("generation"), status.get("observedGeneration")
    if isinstance(generation, int) and isinstance(seen, int) and seen < generation:
        return False  # a newer spec the controller has not acted on yet
    return _count(status, "currentNumberScheduled") >= _count(status, "desiredNumberScheduled")


#: how an admission refused by the DaemonSet's own count opens its reason
UNCOUNTED = "its controller does not count the node"


def _uncounted(ds: Obj) -> Admission:
    status = ds.get("status") or {}
    desired, current = _count(status, "desiredNumberScheduled"), _count(status, "currentNumberScheduled")
    return Admission(ok=False, reasons=(f"{UNCOUNTED} (DESIRED {desired}, "
                                        f"CURRENT {current}: a pod on every node it wants one on)",))


def placement(ds: Obj, pods: Iterable[Obj], node: Obj) -> Placement:
    """The DaemonSet's situation on ``node``: admitted or not, its pod there and its health.

    A node the template admits but that has no pod, of a DaemonSet whose controller reports a pod
    on every node it wants, is not admitted: "admits the node but made no pod" would accuse the
    controller of a failure its own status denies."""
    meta = meta_of(ds)
    name = name_of(node)
    mine = _owned_by_node(ds, pods).get(name, [])
    pod = _pick(mine)
    admission = daemonset_admits(ds, node)
    if pod is None and admission.ok and controller_is_content(ds):
        admission = _uncounted(ds)
    return Placement(
        daemonset=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        node=name,
        admission=admission,
        pod=pod,
        health=pod_health(pod) if pod is not None else None,
    )


@dataclass(frozen=True)
class DaemonSetCounts:
    """``kubectl get ds`` columns, for the evidence."""

    desired: int = 0
    current: int = 0
    ready: int = 0
    selector: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        sel = ",".join(f"{k}={v}" for k, v in self.selector.items()) or "<none>"
        return f"DESIRED {self.desired} CURRENT {self.current} READY {self.ready} NODE SELECTOR {sel}"


def _count(status: Mapping[str, Any], key: str) -> int:
    try:
        return int(status.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def counts(ds: Obj) -> DaemonSetCounts:
    status = ds.get("status") or {}
    selector = template_spec(ds).get("nodeSelector") or {}
    return DaemonSetCounts(
        desired=_count(status, "desiredNumberScheduled"),
        current=_count(status, "currentNumberScheduled"),
        ready=_count(status, "numberReady"),
        selector={str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {},
    )
