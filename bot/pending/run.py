"""Drive ``gpubot pending``: one scan, the cluster-wide facts read once, bounded diagnoses.

Why this shape: a cluster can hold hundreds of stuck GPU pods, and one why-pending costs a few
list calls plus node reads. So the nodes, the GPU components, the namespaces and the pods on GPU
nodes are gathered once (``Facts.share`` hands them to every diagnosis); the pods that wait are
listed once (every namespace: only those the API reports not running, and the GPU pods on GPU
nodes that run but are not ready, found in that shared fact), and the schedulers' events about
pods once; per-pod reads share one memo (``SharedReads``).
At most ``MAX_DIAGNOSES`` workloads get their own diagnosis, one per distinct signature first
(pod state, GPU ask, the scheduler's message without its numbers), then a few confirmations of
each signature from other namespaces; the rest are counted "like" the diagnosed workloads with
their signature where those agree, or listed as not diagnosed. A read that failed makes
the whole answer incomplete: it is said first, and nothing is concluded from it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from bot.commands import Invocation, command_prefix
from bot.engine import unreadable
from bot.engine.facts import Facts
from bot.engine.gather import Sources, gather
from bot.engine.progress import Progress, no_progress
from bot.engine.runbooks import RunbookSet
from bot.engine.runner import run_diagnosis, word
from bot.errors import KubeApiError, NotFoundError
from bot.exit_heap import spent
from bot.kube.objects import Obj, meta_of, name_of
from bot.pending.reads import SharedReads
from bot.pending.scan import Stuck, age, group, is_stuck_gpu_pod, signature
from bot.probes.deadline import until
from bot.probes.node_memo import NodeReadMemo
from bot.report import Finding, Report, Unreadable
from bot.report.pending import NO_CAUSE, PendingAnswer, PendingGroup, PendingLine
from bot.settings import ClusterConfig, Settings


class Service(Protocol):
    """What ``pending`` needs of ``bot.service.Service``: its runbooks, settings and a cluster's
    read sources. A protocol, so this package does not import the service that dispatches to it."""

    @property
    def runbooks(self) -> RunbookSet: ...

    @property
    def settings(self) -> Settings: ...

    async def sources(
        self, inv: Invocation, deadline: float, *, progress: Progress = no_progress
    ) -> tuple[ClusterConfig, Sources]: ...

log = logging.getLogger(__name__)

#: full diagnoses per answer; beyond it workloads are counted like a diagnosed one, or listed
MAX_DIAGNOSES = 20
#: diagnoses run at once (their node reads are bounded by ``ssh_concurrency`` each)
CONCURRENT_DIAGNOSES = 4
#: read once for the whole answer and shared with every diagnosis
SHARED_FACTS = ("nodes", "components", "namespaces", "node_pods")
#: pods that may still run (the field selector of ``bot.engine.gather.kube``)
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
#: pods that may still run and do not (Pending, Unknown): the cluster-wide scan's field selector
NOT_RUNNING = "status.phase!=Running," + NON_TERMINAL
#: the events the signatures read: the schedulers' words about pods that wait
SCHEDULING_EVENTS = "reason=FailedScheduling,involvedObject.kind=Pod"
#: extra diagnoses of one signature at most (``plan``)
EXTRAS_PER_SIGNATURE = 3
#: full reads at once of GPU pods that run but are not ready
UNREADY_READS = 8
#: a diagnosis is not started with less time than this before the deadline
START_MARGIN_S = 1.0
#: extra diagnoses (workloads like one already diagnosed) start only within this share of the time
#: the answer has: the first of each signature is what the answer needs, extras only confirm it
EXTRA_SHARE = 0.5
#: and only while the answer has taken less than this many times what it took to have every
#: signature diagnosed once (the reads and the firsts, a why-pending's worth of work), each where
#: it should end by then (``starts_extra``): at 5,000 nodes each confirmation costs a diagnosis's
#: checks over every node, and twenty of them cost more than the answer itself
EXTRA_COST = 1.25
#: ... or for at least this long after the firsts (on a small cluster a confirmation costs little)
EXTRA_MIN_S = 0.5
#: the fix shown on a line, at most this long (cut at a word, saying so)
FIX_CHARS = 72
#: the diagnosis runbook whose engine answers
RUNBOOK = "why-pending"


@dataclass
class _Outcome:
    """One stuck workload's diagnosis as the table needs it: the first finding, and the reads that
    failed, so a row never shows a cause that rests on something unread."""

    stuck: Stuck
    cause: Finding | None
    failures: list[Unreadable]


def short_fix(finding: Finding | None) -> str:
    """The fix in a few words: the finding's first fix, else its first next step, cut at a word.

    Where the finding offers the same action on several objects (three Terminating holders to
    delete), the line says how many more: the first alone would read as the whole fix."""
    if finding is None:
        return "nothing found: run why-pending on it"
    offers = finding.remediations
    text = offers[0].summary if offers else (finding.next_steps or [finding.title])[0]
    more = sum(1 for r in offers[1:] if r.action == offers[0].action)
    tail = f" (+{more} more)" if more else ""
    text = " ".join(text.split())
    if len(text) + len(tail) <= FIX_CHARS:
        return text + tail
    cut = text[: FIX_CHARS - 1 - len(tail)].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…" + tail


def _cause(report: Report) -> Finding | None:
    """The diagnosis's root cause: its first finding (the engine orders them)."""
    return report.findings[0] if report.findings else None


async def _waiting_pods(kube: SharedReads, namespace: str) -> list[Obj]:
    """The scope's GPU pods that do not run and are not finished. One namespace: its pods that may
    still run, in full. Every namespace: only the pods the API reports not running (Pending,
    Unknown), field-selected server-side, so a cluster's 100,000 running pods are never sent; the
    ones that run but are not ready are found by ``_unready_running`` instead."""
    selector = NON_TERMINAL if namespace else NOT_RUNNING
    return [p for p in await kube.list_pods(namespace, field_selector=selector) if is_stuck_gpu_pod(p)]


async def _unready_running(kube: SharedReads, base: Facts) -> list[Obj]:
    """GPU pods that run but are not ready (a crash loop, a failing probe), cluster-wide: the
    candidates come from the slim records of the pods on GPU nodes (the shared ``node_pods`` fact
    every diagnosis reads anyway), and only those are read in full. A GPU pod is bound to a node
    that offers its GPU resource, which is a GPU node (``bot.kube.gpu.is_gpu_node``)."""
    wanted = sorted({(p.namespace, p.name) for pods in base.node_pods.values() for p in pods
                     if p.gpu and p.phase == "Running" and p.ready is False and not p.terminating})
    gate = asyncio.Semaphore(UNREADY_READS)

    async def read(namespace: str, name: str) -> Obj | None:
        async with gate:
            try:
                return await kube.get_object("Pod", name, namespace)
            except NotFoundError:
                return None  # gone since: nothing waits

    found = await asyncio.gather(*(read(ns, name) for ns, name in wanted), return_exceptions=True)
    failed = next((r for r in found if isinstance(r, BaseException)), None)
    if failed is not None:
        raise failed  # every read has ended: none is left running behind the answer
    return [p for p in found if isinstance(p, dict) and is_stuck_gpu_pod(p)]


def _key(pod: Obj) -> tuple[str, str]:
    meta = meta_of(pod)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


async def _unready_scan(kube: SharedReads, base: Facts, report: Report, failures: list[Unreadable],
                        known: set[tuple[str, str]]) -> list[Obj]:
    """``_unready_running`` on the shared facts; what it could not read is said, never concluded."""
    what = "GPU pods that run but are not ready"
    if "node_pods" in base.unreadable:
        report.skip(what, "the pods on GPU nodes could not be read")
        return []
    try:
        return [p for p in await _unready_running(kube, base) if _key(p) not in known]
    except KubeApiError as exc:
        failures.append(Unreadable.of(exc, what))
        report.skip(what, exc.user_message)
        return []


async def _replicasets(kube: SharedReads, namespaces: Sequence[str]) -> dict[tuple[str, str], Obj]:
    batches = await asyncio.gather(*(kube.list_replicasets(ns) for ns in namespaces))
    return {
        (ns, name_of(rs)): rs
        for ns, batch in zip(namespaces, batches, strict=True)
        for rs in batch
    }


async def _scheduling_events(kube: SharedReads, namespace: str) -> dict[str, dict[str, list[Obj]]]:
    """The scope's FailedScheduling events about pods, by namespace and pod name: one
    field-selected list, whose size follows the pods that wait rather than the namespaces' event
    volume. The signatures read them; each diagnosis reads its own pod's events as why-pending does."""
    index: dict[str, dict[str, list[Obj]]] = {}
    for event in await kube.list_events(namespace, field_selector=SCHEDULING_EVENTS):
        about = event.get("involvedObject") or {}
        ns = str(about.get("namespace") or meta_of(event).get("namespace") or "")
        index.setdefault(ns, {}).setdefault(str(about.get("name") or ""), []).append(event)
    return index


def plan(stuck: Sequence[Stuck], bound: int) -> tuple[list[Stuck], list[Stuck]]:
    """(diagnosed, not): one per distinct signature first, then extras up to ``bound``.

    The extras confirm that the workloads counted "like" a diagnosed one share its cause, so they
    go round the signatures in turn (the one with the most workloads waiting first), at most
    ``EXTRAS_PER_SIGNATURE`` each, each from a namespace that signature has no diagnosis in yet
    where it has one: what differs between namespaces (labels, quotas, queues) is what a
    confirmation can catch. More of one signature from one namespace would cost an answer at
    5,000 nodes ~40 ms of CPU each and tell nothing new. An extra left out (``EXTRA_SHARE``,
    ``EXTRA_COST``) is still counted like a diagnosed workload."""
    chosen: list[Stuck] = []
    queues: dict[tuple[str, ...], list[Stuck]] = {}
    for s in stuck:
        if s.signature not in queues and len(chosen) < bound:
            chosen.append(s)
            queues[s.signature] = []
        elif s.signature in queues:
            queues[s.signature].append(s)
    seen = {c.signature: {c.namespace} for c in chosen}
    taken = dict.fromkeys(queues, 0)
    order = sorted(queues, key=lambda sig: -len(queues[sig]))  # stable: first seen first on a tie
    while len(chosen) < bound:
        took_one = False
        for sig in order:
            waiting = queues[sig]
            if not waiting or taken[sig] >= EXTRAS_PER_SIGNATURE or len(chosen) >= bound:
                continue
            pick = next((s for s in waiting if s.namespace not in seen[sig]), waiting[0])
            waiting.remove(pick)
            seen[sig].add(pick.namespace)
            taken[sig] += 1
            chosen.append(pick)
            took_one = True
        if not took_one:
            break
    picked = {id(s) for s in chosen}
    return chosen, [s for s in stuck if id(s) not in picked]


def starts_extra(now: float, longest_first: float, until: float) -> bool:
    """An extra starts only if it should end by ``until``: one takes about what the longest first
    diagnosis took. The window bounds what the confirmations add to the answer, not only when they
    start: extras started near its end ran on past it (at 5,000 nodes, ~0.2 s on top of 0.5 s)."""
    return now + longest_first <= until


def extras_until(now: float, took: float, until: float) -> float:
    """When extras stop starting, ``took`` seconds into the answer with every signature diagnosed
    (``now``), given the limit so far (``until``): ``EXTRA_COST`` times ``took`` in all, at least
    ``EXTRA_MIN_S`` more, never past ``until``."""
    return min(until, now + max(EXTRA_MIN_S, took * (EXTRA_COST - 1.0)))


class PendingRun:
    """One ``pending`` answer: the service's runbooks and settings, the scope, the shared facts."""

    def __init__(self, service: Service, inv: Invocation, sources: Sources, deadline: float, bound: int) -> None:
        self.service = service
        self.inv = inv
        self.sources = sources
        self.deadline = deadline
        self.bound = bound
        self.runbook = service.runbooks.diagnosis(RUNBOOK)
        self.gate = asyncio.Semaphore(CONCURRENT_DIAGNOSES)
        now = time.monotonic()
        self.extra_until = now + max(0.0, deadline - now) * EXTRA_SHARE
        #: how long the slowest first diagnosis took: what an extra is expected to take
        self.longest_first = 0.0

    def bound_extras(self, took: float) -> None:
        """Every signature is diagnosed once, ``took`` seconds into the answer: extras start only
        until the answer has taken ``EXTRA_COST`` times that (``EXTRA_MIN_S`` at least)."""
        self.extra_until = extras_until(time.monotonic(), took, self.extra_until)

    def facts(self, inv: Invocation) -> Facts:
        facts = Facts(inv, tables=self.runbook.tables, ssh_concurrency=self.service.settings.ssh_concurrency,
                      deadline=self.deadline)
        spent(facts)  # a one-shot process keeps it to its exit (bot.exit_heap)
        return facts

    async def diagnose(self, base: Facts, stuck: Stuck, *, extra: bool = False) -> _Outcome | None:
        """The why-pending engine on one workload, on the shared facts; None: no time left to start
        (for an ``extra``, one that would not end within ``EXTRA_SHARE`` of the answer's time or
        ``EXTRA_COST``: ``starts_extra``)."""
        async with self.gate:
            now = time.monotonic()
            if now > self.deadline - START_MARGIN_S or (
                extra and not starts_extra(now, self.longest_first, self.extra_until)
            ):
                return None
            if stuck.kind != "Pod":
                try:
                    await self.sources.kube.get_object(stuck.kind, stuck.name, stuck.namespace)
                except NotFoundError:  # an owner that is gone: the pod is what is left to diagnose
                    stuck.by_pod = True
                except KubeApiError:
                    pass  # the diagnosis reads it again and says it could not
            kind, name = stuck.asked()
            inv = Invocation(command=RUNBOOK, kind=kind, name=name, namespace=stuck.namespace,
                             cluster=self.inv.cluster, surface=self.inv.surface, identity=self.inv.identity)
            facts = self.facts(inv)
            facts.share(base, SHARED_FACTS)
            report = await run_diagnosis(self.runbook, self.service.runbooks, facts, self.sources,
                                         command_prefix=command_prefix(self.inv.surface),
                                         strict=self.service.settings.strict_checks)
            if not extra:
                self.longest_first = max(self.longest_first, time.monotonic() - now)
            return _Outcome(stuck, _cause(report), list(report.unreadable))


def _line(stuck: Stuck, cause: Finding | None, *, diagnosed: bool) -> PendingLine:
    return PendingLine(namespace=stuck.namespace, workload=stuck.shown, pods=len(stuck.pods),
                       age=age(stuck.oldest()) if stuck.oldest() else "?",
                       code=cause.code if cause is not None else NO_CAUSE, fix=short_fix(cause), diagnosed=diagnosed)


def build_answer(namespace: str, stuck: Sequence[Stuck], outcomes: Sequence[_Outcome],
                 left: Sequence[Stuck], *, bound: int, why_left: str) -> PendingAnswer:
    """Group the diagnosed workloads by cause; count the rest like the diagnosed ones of their
    signature, only where those agree: where two workloads of one signature were diagnosed with
    different causes, the signature does not tell the rest's cause, and they are listed as not
    diagnosed rather than given either one."""
    answer = PendingAnswer(namespace=namespace, stuck_pods=sum(len(s.pods) for s in stuck),
                           workloads=len(stuck), diagnoses=len(outcomes), bound=bound)
    groups: dict[str, PendingGroup] = {}
    by_signature: dict[tuple[str, ...], Finding | None] = {}

    def add(stuck_one: Stuck, cause: Finding | None, diagnosed: bool) -> None:
        code = cause.code if cause is not None else NO_CAUSE
        g = groups.get(code)
        if g is None:
            g = groups[code] = PendingGroup(
                code=code, severity=cause.severity if cause is not None else "info",
                title=cause.title if cause is not None else "no cause found by the engine",
                rank=cause.rank if cause is not None else 99)
        g.lines.append(_line(stuck_one, cause, diagnosed=diagnosed))

    causes: dict[tuple[str, ...], set[str]] = {}
    for o in outcomes:
        by_signature.setdefault(o.stuck.signature, o.cause)
        causes.setdefault(o.stuck.signature, set()).add(o.cause.code if o.cause is not None else NO_CAUSE)
        add(o.stuck, o.cause, True)
    differ = 0
    for s in left:
        if len(causes.get(s.signature, ())) == 1:
            add(s, by_signature[s.signature], False)
        else:  # never diagnosed, or its diagnosed likes disagree: no cause is claimed for it
            answer.undiagnosed.append(_line(s, None, diagnosed=False))
            differ += s.signature in causes
    reasons = [why_left] if len(answer.undiagnosed) > differ else []
    if differ:
        reasons.append(f"{differ} whose like workloads were diagnosed with different causes")
    answer.undiagnosed_why = "; ".join(reasons)
    for g in groups.values():
        g.lines.sort(key=lambda line: (not line.diagnosed, -line.pods, line.namespace, line.workload))
    answer.groups = sorted(groups.values(), key=PendingGroup.sort_key)
    return answer


async def run_pending(
    service: Service,
    inv: Invocation,
    *,
    deadline: float,
    bound: int | None = None,
    progress: Progress = no_progress,
) -> Report:
    """``pending``: the report whose ``pending`` holds the answer and whose findings say what
    could not be read (an answer missing reads is incomplete: exit 3). ``bound``: at most this
    many full diagnoses (default ``MAX_DIAGNOSES``)."""
    with until(deadline):  # every read of the answer, the scan's own included, sees the deadline
        return await _run_pending(service, inv, deadline, MAX_DIAGNOSES if bound is None else bound, progress)


async def _run_pending(
    service: Service, inv: Invocation, deadline: float, bound: int, progress: Progress
) -> Report:
    started = time.perf_counter()
    progress("listing the pods that wait")
    cluster, sources = await service.sources(inv, deadline, progress=progress)
    namespace = "" if inv.all_namespaces else inv.namespace
    report = Report(command="pending", target=inv.target(), cluster=cluster.name)
    report.read_as = str(inv.identity) if inv.identity is not None else ""
    failures: list[Unreadable] = []
    shared = SharedReads(sources.kube)
    runner = PendingRun(service, inv, replace(sources, kube=shared, node_memo=NodeReadMemo()), deadline, bound)
    # the cluster-wide facts are read while the scan lists the pods that wait; with one namespace
    # and nothing stuck in it they are not needed and their read is cancelled
    base = runner.facts(Invocation(command="node-status", cluster=inv.cluster, surface=inv.surface))
    shared_facts = asyncio.ensure_future(gather(base, runner.sources, SHARED_FACTS))
    scanned = True
    try:
        pods = await _waiting_pods(shared, namespace)
    except KubeApiError as exc:
        failures.append(Unreadable.of(exc, f"pods of {'the cluster' if not namespace else 'namespace ' + namespace}"))
        report.skip("the scan for GPU pods", exc.user_message)
        pods, scanned = [], False
    if not namespace and scanned:
        await shared_facts
        pods += await _unready_scan(shared, base, report, failures, {_key(p) for p in pods})
    shared.know_pods(pods)
    log.debug("pending: scan of %s done in %.2f s: %d stuck GPU pod(s)", namespace or "every namespace",
              time.perf_counter() - started, len(pods))
    stuck: list[Stuck] = []
    outcomes: list[_Outcome] = []
    left: list[Stuck] = []
    why_left = f"over the limit of {bound} diagnoses"
    if not pods:
        if shared_facts.done() and not shared_facts.cancelled():
            failures += base.failures  # read for the scan itself (-A): what it missed is said
            report.skipped += base.skipped
        shared_facts.cancel()
        await asyncio.gather(shared_facts, return_exceptions=True)
    else:
        namespaces = sorted({str(p["metadata"].get("namespace") or "") for p in pods})
        scan = asyncio.gather(_replicasets(shared, namespaces), _scheduling_events(shared, namespace), shared_facts,
                              return_exceptions=True)
        replicasets, events, _ = await scan
        if isinstance(replicasets, KubeApiError):
            failures.append(Unreadable.of(replicasets, "replicasets"))
        if isinstance(events, KubeApiError):
            failures.append(Unreadable.of(events, "events"))
        stuck = group(pods, replicasets if isinstance(replicasets, dict) else {})
        for s in stuck:
            s.signature = signature(s, events.get(s.namespace, {}) if isinstance(events, dict) else {})
        failures += base.failures
        report.skipped += base.skipped
        if not base.unreadable & {"nodes", "components"}:
            _ = base.gpu_nodes  # worked out once here, shared by every diagnosis (``Facts.share``)
        log.debug("pending: shared facts and %d namespace(s) read at %.2f s", len(namespaces),
                  time.perf_counter() - started)
        chosen, left = plan(stuck, bound)
        firsts = {s.signature: id(s) for s in reversed(chosen)}
        wave = [s for s in chosen if firsts[s.signature] == id(s)]
        done = dict(zip(map(id, wave), await asyncio.gather(*(runner.diagnose(base, s) for s in wave)), strict=True))
        log.debug("pending: %d first diagnoses done at %.2f s", len(wave), time.perf_counter() - started)
        runner.bound_extras(time.perf_counter() - started)
        extras = [s for s in chosen if id(s) not in done]
        done.update(zip(map(id, extras), await asyncio.gather(*(runner.diagnose(base, s, extra=True)
                                                                 for s in extras)), strict=True))
        results = [done[id(s)] for s in chosen]
        outcomes = [r for r in results if r is not None]
        late = [s for s, r in zip(chosen, results, strict=True) if r is None]
        if late:
            left = late + left
            diagnosed = {o.stuck.signature for o in outcomes}
            if any(s.signature not in diagnosed for s in late):  # not merely extras left out
                why_left = "the deadline came first" if not left[len(late):] else why_left + "; some for the deadline"
        for o in outcomes:
            failures += o.failures
        log.debug("pending: %d diagnoses done at %.2f s", len(outcomes), time.perf_counter() - started)
    report.pending = build_answer(namespace, stuck, outcomes, left, bound=bound, why_left=why_left)
    report.pending.scanned = scanned
    report.unreadable = unreadable.unique(failures)
    report.findings = word(unreadable.detections(report.unreadable), service.runbooks,
                           {"gpubot": command_prefix(inv.surface)})
    report.elapsed_ms = int((time.perf_counter() - started) * 1000)
    return report
