"""Typed facts for one invocation: what the cluster, the nodes and the containers showed.

Loaders (``bot.engine.gather``) fill the base facts; derived facts are computed from them once,
on first use, and cached. Every accessor raises ``FactNotGathered`` when the runner did not
gather what it rests on, so a check that reads a fact it did not declare fails loudly in tests
instead of silently seeing nothing.

Every base fact says how it was obtained: read (gathered, whatever it holds), absent (read and
empty: a 404, an empty list) or unreadable (in ``Facts.unreadable``, the failed reads with their
class in ``Facts.failures``). An unreadable fact holds its empty value only so nothing crashes;
the runner runs no check that rests on it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast

from bot.commands import Invocation
from bot.engine.cards import CardPods, CardVerdicts, EarlyCards, card_pods, card_verdicts
from bot.engine.queue_facts import DraFacts, QueueFacts
from bot.errors import GpubotError, NodeProbeError
from bot.kube.admission import Rejection, rejections
from bot.kube.gpu import gpu_node_names, is_gpu_component, nodes_that_may_offer
from bot.kube.objects import Obj, meta_of, uid_of
from bot.kube.pod_affinity import AffinityResult, evaluate, required_pod_terms
from bot.kube.resources import pod_node_gpu_requests
from bot.kube.scheduling import ParsedSchedulingMessage, parse_scheduling_message, timed_scheduling_events
from bot.kube.story import (
    Cutoff,
    HistoryJudge,
    build_story,
    build_workload_story,
    needs_story,
    node_change_cutoff,
)
from bot.kube.workload import workload_status
from bot.probes.container import ExecFacts
from bot.probes.observation import NodeObservation
from bot.probes.slim import SlimPod
from bot.report import Skipped, Unreadable
from bot.report.story import PodStory


class FactNotGathered(GpubotError):
    """A check read a fact it did not declare (a bug in the check, caught by the tests)."""


_Derivation = TypeVar("_Derivation", bound=Callable[..., Any])


def per_question(fn: _Derivation) -> _Derivation:
    """Work ``fn(facts, *args)`` out once per ``Facts`` and arguments (compared by identity).

    Why: several checks ask the same question of every node for the same pod (which nodes its
    node selection admits, which GPU nodes could serve it); at 5,000 nodes each asking again cost
    more than the checks' own logic. The value is a pure function of the facts, so sharing it
    lets no check see another's result. It is shared: callers must not change it.
    """

    @functools.wraps(fn)
    def once(facts: Facts, *args: Any) -> Any:
        key = (fn, *map(id, args))
        hit = facts._derived.get(key)
        # the arguments are kept with the value: an id is only unique among live objects
        if hit is None or any(kept is not arg for kept, arg in zip(hit[0], args, strict=True)):
            hit = facts._derived[key] = (args, fn(facts, *args))
        return hit[1]

    return cast(_Derivation, once)


def per_cluster(*reads: str) -> Callable[[_Derivation], _Derivation]:
    """Work ``fn(facts, *args)`` out once per value of the base facts ``reads`` (compared by
    identity) and the arguments (compared by value: a resource name, never an object).

    Why: ``gpubot pending`` runs one diagnosis per workload on the same cluster-wide facts
    (``Facts.share``), and what a check works out of the nodes alone, not of the asking pod (the
    tainted nodes, the qGPU nodes, what each resource's nodes offer), every diagnosis worked out
    again: at 5,000 nodes a third of a qGPU diagnosis's checks. Facts that share base facts share
    these values; ``fn`` must read nothing but ``reads`` (and its arguments), and callers must
    not change what it returns.
    """

    def decorate(fn: _Derivation) -> _Derivation:
        @functools.wraps(fn)
        def once(facts: Facts, *args: Any) -> Any:
            values = tuple(facts._values.get(name) for name in reads)
            key = (fn, *args)
            hit = facts._cluster.get(key)
            if hit is None or any(kept is not value for kept, value in zip(hit[1], values, strict=True)):
                # two diagnoses' threads may both work it out: the same value, either one kept
                hit = facts._cluster[key] = (reads, values, fn(facts, *args))
            return hit[2]

        return cast(_Derivation, once)

    return decorate


@dataclass
class TargetFacts:
    """What the user asked about, resolved."""

    kind: str
    name: str
    namespace: str
    namespace_exists: bool = True
    pod: Obj | None = None
    workload: Obj | None = None
    #: the workload's pods (or just the pod), the most interesting first
    pods: list[Obj] = field(default_factory=list)
    #: owner chain of the pod or workload, nearest first (ReplicaSet, Deployment…)
    owners: list[Obj] = field(default_factory=list)
    #: what a custom batch workload made on the way to its pods (a RayJob's RayCluster)
    made: list[Obj] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)


class ParsedMessages(Sequence[ParsedSchedulingMessage]):
    """FailedScheduling messages, newest first, each parsed when first read and only once.

    A pod can carry 20,000 events; the checks read the newest message (and whether there is
    one), so parsing them all would cost seconds of CPU for nothing. The same text (the
    scheduler repeats itself) is parsed once however often it occurs.
    """

    def __init__(self, messages: list[str]) -> None:
        self._messages = messages
        self._parsed: dict[str, ParsedSchedulingMessage] = {}

    def __len__(self) -> int:
        return len(self._messages)

    def _parse(self, text: str) -> ParsedSchedulingMessage:
        found = self._parsed.get(text)
        if found is None:
            found = self._parsed[text] = parse_scheduling_message(text)
        return found

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._parse(text) for text in self._messages[index]]
        return self._parse(self._messages[index])


@dataclass
class EventFacts:
    """Events of the target pod and of its owners (a webhook denial is recorded on the owner)."""

    pod: list[Obj] = field(default_factory=list)
    owners: list[Obj] = field(default_factory=list)
    #: the pod the events are about, and the newest node change its scheduler has not answered
    #: (``Facts.events`` sets them once the target and the nodes are read)
    subject: Obj | None = None
    cutoff: Cutoff | None = None
    aged: bool = False

    def age(self, subject: Obj | None, cutoff: Cutoff | None) -> None:
        """Say which pod the events are about and since when its scheduler's words are current."""
        self.subject, self.cutoff, self.aged = subject, cutoff, True

    @cached_property
    def _split(self) -> tuple[list[Mapping[str, Any]], list[tuple[Mapping[str, Any], str]]]:
        current: list[Mapping[str, Any]] = []
        history: list[tuple[Mapping[str, Any], str]] = []
        judge = HistoryJudge(self.subject, self.cutoff)
        for when, e in timed_scheduling_events(self.pod):
            why = judge.reason(e, when)
            if why:
                history.append((e, why))
            else:
                current.append(e)
        return current, history

    @cached_property
    def scheduling(self) -> Sequence[ParsedSchedulingMessage]:
        """The pod's current FailedScheduling messages, newest first, parsed on first read, once per
        invocation. Messages that are history (``scheduling_history``) are left out: a check never
        concludes from what the scheduler said about a cluster that has changed since."""
        return ParsedMessages([str(e.get("message") or e.get("note") or "") for e in self._split[0]])

    @property
    def scheduling_history(self) -> list[tuple[Mapping[str, Any], str]]:
        """FailedScheduling events that are history, newest first, each with why."""
        return self._split[1]


@dataclass
class GpuComponents:
    """GPU-stack controllers (DaemonSets, Deployments) and their pods, in whatever namespace."""

    controllers: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    #: pod uid -> events, for the GPU-stack pods that do not run (their own story)
    events: dict[str, list[Obj]] = field(default_factory=dict)
    _by_node: tuple[int, dict[str, list[Obj]]] | None = field(default=None, init=False, repr=False, compare=False)

    def pods_on(self, node: str) -> list[Obj]:
        """The pods on ``node`` (spec.nodeName). Grouped once: the per-node checks and rows of a
        fleet-wide node-status asked this of every node, and scanning every pod each time made
        the report quadratic in the fleet. Regrouped if the list grew or shrank."""
        if self._by_node is None or self._by_node[0] != len(self.pods):
            index: dict[str, list[Obj]] = {}
            for p in self.pods:
                index.setdefault(str((p.get("spec") or {}).get("nodeName") or ""), []).append(p)
            self._by_node = (len(self.pods), index)
        return self._by_node[1].get(node, [])

    def story_of(self, pod: Mapping[str, Any]) -> PodStory | None:
        """A GPU-stack pod's own story when it does not run (its events, containers, conditions)."""
        if not needs_story(pod):
            return None
        return build_story(pod, (), self.events.get(uid_of(pod), []))

    def nodes_running_components(self) -> set[str]:
        """Nodes running a GPU node agent. Controllers that run anywhere do not count: the GPU
        Operator's own Deployment, and Node Feature Discovery (whose pods the operator names
        gpu-operator-node-feature-discovery-*), which labels every node, GPU or not."""
        out = set()
        for p in self.pods:
            meta = meta_of(p)
            node = (p.get("spec") or {}).get("nodeName")
            owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
            if not node or "node-feature-discovery" in str(meta.get("name", "")):
                continue
            if any(o.get("kind") in ("ReplicaSet", "Job") for o in owners):
                continue
            out.add(str(node))
        return out


@dataclass
class QuotaFacts:
    """The target namespace's ResourceQuotas, and (only when there is one) the pods they count."""

    quotas: list[Obj] = field(default_factory=list)
    #: the namespace's non-terminal pods, to say who uses a quota; empty when there is no quota
    pods: list[Obj] = field(default_factory=list)


#: what the node-readings loader puts beside its fact: the card verdicts and placements it worked
#: out while the other nodes were being read (``bot.engine.cards.EarlyVerdicts``); ``card_verdicts``
#: and ``card_pods`` keep those of the very reading they have, and work out the rest
EARLY_CARD_VERDICTS = "early_card_verdicts"
#: and, where the runbook shows the node table (``Facts.node_table``), the table's rows built as
#: each node answered (``bot.engine.node_rows.EarlyRows``), which ``build_node_rows`` completes
EARLY_NODE_ROWS = "early_node_rows"

#: derived fact -> the base facts it is computed from (the runner gathers those)
DERIVED: dict[str, tuple[str, ...]] = {
    "pod": ("target",),
    "pod_affinity": ("target", "nodes", "peers", "namespaces"),
    "gpu_nodes": ("nodes", "components"),
    "scope_nodes": ("nodes", "components"),
    "candidates": ("target", "nodes"),
    "observations": ("node_readings",),
    "pending_pod": ("target",),
    "admission_rejected": ("target",),
    "card_verdicts": ("node_readings",),
    "card_pods": ("node_readings", "node_pods"),
    "story": ("target", "events"),
}


class Facts:
    """Everything checks may read for one invocation."""

    def __init__(
        self,
        inv: Invocation,
        *,
        tables: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        ssh_concurrency: int = 16,
        deadline: float | None = None,
    ) -> None:
        self.inv = inv
        self._tables = dict(tables or {})
        self.ssh_concurrency = ssh_concurrency
        #: ``time.monotonic()`` by which gathering must be done (None: no overall deadline)
        self.deadline = deadline
        self._values: dict[str, Any] = {}
        self.skipped: list[Skipped] = []
        #: base facts that could not be read, wholly or in part (unreachable, TLS, timeout, 401,
        #: 403, 5xx/429, a broken loader, or a fact they rest on could not be read): unknown, not
        #: empty, so a check that rests on one is not run and nothing is offered on it
        self.unreadable: set[str] = set()
        #: each failed read, for the report's "could not read" findings and its ``unreadable`` list
        self.failures: list[Unreadable] = []
        #: what ``per_question`` derivations worked out: (function, argument ids) -> (arguments, value)
        self._derived: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
        #: what ``per_cluster`` derivations worked out: (function, arguments) -> (the base facts it
        #: reads, their values it was worked out of, value); one dict for all facts sharing base facts
        self._cluster: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[Any, ...], Any]] = {}
        #: the runbook shows node-status's table: its rows are built as each node answers (set by
        #: ``bot.engine.runner.run_diagnosis``, which knows the runbook)
        self.node_table = False
        #: the runbook's checks' per-node parts (``bot.engine.per_node``), worked out as each node
        #: answers (set by ``run_diagnosis`` too)
        self.early_parts: Sequence[Any] = ()
        #: words one detection of those parts as the catalogue does (set by ``run_diagnosis``):
        #: the findings of a node's parts are worded as it answers, too
        self.early_words: Callable[[Any], Any] | None = None
        #: base facts not read because the question turned out to have no subject (the asked pod or
        #: workload does not exist, ``no_subject``): not unknown, just not needed; checks resting
        #: on them do not run and nothing is said of them
        self.not_needed: set[str] = set()

    # ------------------------------------------------------------------ filling (loaders only)

    def put(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._derived.clear()  # worked out from what was there before
        # the same object put again may have been changed in place: what rests on it goes too
        for key, entry in list(self._cluster.items()):
            if name in entry[0]:
                self._cluster.pop(key, None)

    def gathered(self, name: str) -> bool:
        return name in self._values

    def no_subject(self) -> bool:
        """The question is about a pod or workload the API does not have (read, not failed):
        nothing but that, and the close names, is worth reading for it. Known once the target's
        loader has finished (it puts the fact before its reads)."""
        if not self.gathered("target") or "target" in self.unreadable:
            return False
        t: TargetFacts = self._values["target"]
        return bool(t.kind) and t.pod is None and t.workload is None

    def beside(self, name: str) -> Any:
        """What a loader put beside its fact (``EARLY_CARD_VERDICTS``, ``EARLY_NODE_ROWS``); None if nothing."""
        return self._values.get(name)

    def share(self, other: Facts, names: Iterable[str]) -> None:
        """Take ``other``'s base facts ``names`` as read, with what could not be read of them:
        many diagnoses of one question (``gpubot pending``) read the cluster-wide facts once."""
        for name in names:
            if other.gathered(name):
                self._values[name] = other._values[name]
            if name in other.unreadable:
                self.unreadable.add(name)
        for failure in other.failures:
            if failure not in self.failures:
                self.failures.append(failure)
        self._cluster = other._cluster  # its entries stand only for the very values they were worked out of
        if set(DERIVED["gpu_nodes"]) <= set(names) and "gpu_nodes" in other.__dict__:
            self.__dict__["gpu_nodes"] = other.__dict__["gpu_nodes"]  # a cached_property, worked out once

    def skip(self, what: str, why: str) -> None:
        self.skipped.append(Skipped(what, why))

    def cannot_read(self, fact: str, failure: Unreadable | None = None) -> None:
        """``fact`` (a base fact; "" for none) is not known in full: checks resting on it do not
        run. ``failure`` says which read failed and how (None: a fact it rests on failed)."""
        if fact:
            self.unreadable.add(fact)
        if failure is not None and failure not in self.failures:
            self.failures.append(failure)

    def _get(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise FactNotGathered(f"fact {name!r} was read but not gathered") from None

    def table(self, name: str) -> list[Mapping[str, Any]]:
        """Rows of a runbook table (empty when the runbook has none)."""
        return list(self._tables.get(name) or [])

    # ------------------------------------------------------------------ base facts

    @property
    def target(self) -> TargetFacts:
        value: TargetFacts = self._get("target")
        return value

    @property
    def events(self) -> EventFacts:
        value: EventFacts = self._get("events")
        if not value.aged and "target" in self._values:
            pod = self.target.pod
            # the nodes that offer what the pod asks (shared with the checks): a walk of every
            # node per question was the largest cost of a warm why-pending on a big cluster
            nodes = self.candidates if self._values.get("nodes") else {}
            value.age(pod, node_change_cutoff(pod, nodes) if pod is not None and nodes else None)
        return value

    @property
    def namespaces(self) -> dict[str, Obj]:
        value: dict[str, Obj] = self._get("namespaces")
        return value

    @property
    def nodes(self) -> dict[str, Obj]:
        value: dict[str, Obj] = self._get("nodes")
        return value

    @property
    def components(self) -> GpuComponents:
        value: GpuComponents = self._get("components")
        return value

    @property
    def queues(self) -> QueueFacts:
        """Kueue, Volcano and KAI objects about the target (``bot.engine.queue_facts``)."""
        value: QueueFacts = self._get("queues")
        return value

    @property
    def dra_inventory(self) -> DraFacts:
        """Every DRA ResourceSlice and ResourceClaim (empty where resource.k8s.io is not served)."""
        value: DraFacts = self._get("dra_inventory")
        return value

    @property
    def quotas(self) -> QuotaFacts:
        """ResourceQuotas of the target's namespace (and the pods they count)."""
        value: QuotaFacts = self._get("quotas")
        return value

    @property
    def peers(self) -> list[Obj]:
        """Pods the target's required pod (anti-)affinity may be about: full objects with labels.

        Empty unless the pending pod has required inter-pod terms or hard topology spread
        constraints, or the scheduler blamed existing pods' anti-affinity.
        """
        value: list[Obj] = self._get("peers")
        return value

    @property
    def node_pods(self) -> dict[str, list[SlimPod]]:
        """Slim records of the pods bound to the nodes in scope (GPU nodes and the target's node)."""
        value: dict[str, list[SlimPod]] = self._get("node_pods")
        return value

    @property
    def node_readings(self) -> dict[str, NodeObservation | NodeProbeError]:
        """What each node in physical scope showed, or why it could not be read."""
        value: dict[str, NodeObservation | NodeProbeError] = self._get("node_readings")
        return value

    @property
    def containers(self) -> ExecFacts | None:
        """What the target pod's GPU containers showed over exec (None: nothing to look into)."""
        value: ExecFacts | None = self._get("containers")
        return value

    # ------------------------------------------------------------------ derived facts

    @property
    def pod(self) -> Obj | None:
        """The target pod (for a workload: its most interesting pod)."""
        return self.target.pod

    @property
    def pending_pod(self) -> Obj | None:
        """The target pod when the scheduler has not placed it yet."""
        pod = self.pod
        if pod is None or (pod.get("status") or {}).get("phase") != "Pending":
            return None
        return None if (pod.get("spec") or {}).get("nodeName") else pod

    @cached_property
    def story(self) -> PodStory | None:
        """The target pod's own story when it is not Running and Ready (``bot.report.story``), built once
        for the checks that quote it and for the report."""
        pod, workload = self.pod, self.target.workload
        events = self.events
        if pod is None and workload is not None:
            status = workload_status(workload)
            if status is None or status.satisfied:
                return None
            counts = status.describe().split(": ", 1)[-1]  # "1 desired, 0 created, …" without the name again
            story = build_workload_story(workload, self.target.owners, events.owners, status=counts)
        elif not needs_story(pod) or pod is None:
            return None
        else:
            story = build_story(pod, self.target.owners, [*events.pod, *events.owners], cutoff=events.cutoff)
        # a refused or failed read of the events leaves the list empty: say so, never "no events"
        story.events_read = "events" not in self.unreadable and not any(s.what == "events" for s in self.skipped)
        return story

    @cached_property
    def admission_rejected(self) -> list[Rejection]:
        """The target's pods (a workload's, Failed ones included) its kubelets rejected, newest first."""
        return rejections(self.target.pods)

    @cached_property
    def gpu_nodes(self) -> list[str]:
        """Every GPU node (see ``bot.kube.gpu``), sorted."""
        return gpu_node_names(self.nodes, self.components.nodes_running_components())

    @cached_property
    def scope_nodes(self) -> list[str]:
        """The nodes a node-level command looks at: those asked for, else every GPU node."""
        if self.inv.nodes:
            return [n for n in self.inv.nodes if n in self.nodes]
        return self.gpu_nodes

    @cached_property
    def candidates(self) -> dict[str, Obj]:
        """Nodes that offer every GPU resource the target pod asks for (all nodes if it asks none).

        HAMi's gpumem/gpucores are left out: no node advertises them, HAMi's scheduler places
        them from its own registrations, so a node offering nvidia.com/gpu is a candidate.
        """
        pod = self.pod
        if pod is None:
            return {}
        wanted = list(pod_node_gpu_requests(pod))
        nodes = self.nodes
        return {
            name: nodes[name]
            for name in nodes_that_may_offer(nodes, wanted)
            if all(r in ((nodes[name].get("status") or {}).get("capacity") or {}) for r in wanted)
        }

    @cached_property
    def pod_affinity(self) -> AffinityResult | None:
        """Required inter-pod (anti-)affinity verdicts over every node, for the pending pod.

        None when the pod is not pending or nothing inter-pod applies (no terms, no peers read).
        """
        pod = self.pending_pod
        if pod is None or (not required_pod_terms(pod) and not self.peers):
            return None
        return evaluate(pod, self.nodes, self.peers, self.namespaces)

    @cached_property
    def observations(self) -> dict[str, NodeObservation]:
        """The nodes that answered, with what they showed."""
        return {n: r for n, r in self.node_readings.items() if isinstance(r, NodeObservation)}

    @cached_property
    def card_verdicts(self) -> CardVerdicts:
        """node -> [(card, the "really working" verdict)], per the runbook's working tables."""
        early: EarlyCards | None = self.beside(EARLY_CARD_VERDICTS)
        return card_verdicts(
            self.observations, self.table("working_signals"), self.table("working_profiles"), early=early
        )

    @cached_property
    def card_pods(self) -> CardPods:
        """node -> card UUID -> [(pod, how the card was found)]."""
        return card_pods(self.observations, self.node_pods, early=self.beside(EARLY_CARD_VERDICTS))


def component_pods(pods: Sequence[Obj]) -> list[Obj]:
    """The GPU-stack pods among ``pods`` (by name and labels)."""
    out = []
    for p in pods:
        meta = meta_of(p)
        if is_gpu_component(str(meta.get("name", "")), meta.get("labels") or {}):
            out.append(p)
    return out
