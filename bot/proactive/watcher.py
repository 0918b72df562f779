"""One watch: its triggers, and the one set of rules by which they post, edit or resolve.

Triggers (each a job ``serve`` runs from ``loops()``): the periodic sweep (node-status over the
fleet, read once per cluster by ``FleetReads``), the pending check (``bot.proactive.pending``),
the watch-stream poll (``bot.proactive.stream``) and, after quiet hours, a catch-up. Each turns
what it found into fingerprinted problems and hands them to ``reconcile``:

- new fingerprint → one message, remembered with its ts;
- known fingerprint, same digest → nothing at all (three sweeps of the same leak post nothing);
- known fingerprint, new digest → the message edited, a thread reply saying what changed;
- open fingerprint no longer found, where the trigger could see it → the message edited to
  "resolved" with how long it lasted.

A channel takes at most ``posts_per_hour`` new posts in any hour (all its watches together);
the problems beyond wait, unremembered, and are listed in one summary message per channel and
hour, edited in place as the list changes; each is posted on its own once the hour allows.
During quiet hours a new problem that is not critical waits too. A new problem goes to the
channel its namespace routes to (``bot.proactive.routing``), a known one stays where it is.

A snoozed problem (its buttons: 1 h, 1 day, until resolved; kept in the store, so a restart
honours them) gets neither a new post nor a change reply; its resolution is still shown, and it
ends an "until resolved" snooze.

A new problem (and the hour's summary) is posted exactly once, across stops: ``bot.proactive.posting``.

A problem is only declared gone when the trigger could see: a node problem needs its node read
over SSH this time, a pending problem the pending check, any other problem a sweep that listed
at least one GPU node. A Slack call that fails leaves the store as it was (a failed first post
leaves its intent), so the next run tries again. Only while ``is_leader()`` does a watch
read or post. This module knows no Slack: a ``Notifier`` posts for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.commands import Invocation
from bot.kube.objects import name_of
from bot.observability import log_event
from bot.proactive.fleet import Diagnoses, FleetReads
from bot.proactive.pending import (
    PENDING_SUBJECTS,
    merge_queue_problems,
    namespace_of,
    pending_groups,
    pending_problem,
)
from bot.proactive.posting import HOUR, Notifier, OncePoster
from bot.proactive.problems import Problem, problems_from_report
from bot.proactive.routing import Route, Router
from bot.proactive.stream import NodeStream
from bot.probes.cache import WatchCache
from bot.probes.kube import KubeReads, Obj
from bot.report import Report
from bot.settings import WatchConfig
from bot.settings.values import QuietHours
from bot.state.contracts import ProblemStore
from bot.state.records import OpenProblem

log = logging.getLogger("gpubot.watch")


#: (cluster, nodes) -> the nodes a gpubot action holds now, each with what acts on it
ActingOn = Callable[[str, list[str]], Awaitable[dict[str, str]]]


@dataclass
class SweepResult:
    """What one sweep did (logged, and read by tests and the benchmark)."""

    posted: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: fingerprints whose Slack call failed; retried next sweep
    failed: list[str] = field(default_factory=list)
    #: fingerprints found but silenced by a snooze
    snoozed: list[str] = field(default_factory=list)
    #: fingerprints held back by the channel's rate limit (listed in the summary message)
    held: list[str] = field(default_factory=list)
    #: fingerprints of new, non-critical problems waiting for the quiet hours to end
    deferred: list[str] = field(default_factory=list)
    #: fingerprints not reported because gpubot itself is acting on their node (its Lease is held)
    acting: list[str] = field(default_factory=list)
    #: this replica is not the leader: nothing was read or posted
    skipped: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


class Watcher:
    """Sweeps one (cluster, channel) watch."""

    def __init__(
        self,
        config: WatchConfig,
        service: Diagnoses,
        store: ProblemStore,
        notifier: Notifier,
        *,
        posts_per_hour: int = 20,
        clock: Callable[[], datetime] = _now,
        reads: Callable[[], KubeReads] | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        fleet: FleetReads | None = None,
        acting: ActingOn | None = None,
    ) -> None:
        self.config = config
        #: which of these nodes a gpubot action holds now (node -> what acts); ``None``: no actions
        self.acting = acting
        #: the cluster's reads (the watch-fed cache in ``serve``) for the pending trigger; ``None``:
        #: no pending trigger (a stand-in diagnosis service without clients)
        self.reads = reads
        #: only the leader replica watches and posts (``bot`` wires the lease); a follower's jobs
        #: return at once without reading or posting
        self.is_leader = is_leader
        #: the cluster's fleet read, shared with the other watches of the cluster
        self.fleet = fleet if fleet is not None else FleetReads(service)
        self._last_sweep_end = float("-inf")
        #: the watch-stream triggers' memory (last node states) and debounce batch
        self.stream = NodeStream(debounce_s=config.stream_debounce_s)
        self.router = Router(config)
        self.quiet = QuietHours.parse(config.quiet_hours, config.quiet_hours_timezone)
        #: new problems the quiet hours held back (fingerprint -> problem); found again after them
        self.deferred: dict[str, Problem] = {}
        self.posts_per_hour = posts_per_hour
        self.service = service
        self.store = store
        self.notifier = notifier
        #: posts a new problem (and the hour's summary) once, across stops
        self.once = OncePoster(store, notifier)
        self.clock = clock
        self.sweeps = 0
        self._posting = asyncio.Lock()

    def loops(self) -> list[tuple[Callable[[], Awaitable[object]], float, str]]:
        """What ``serve`` runs periodically for this watch: (job, interval in seconds, name)."""
        cfg = self.config
        jobs: list[tuple[Callable[[], Awaitable[object]], float, str]] = [
            (self.sweep, cfg.interval_s, f"watch sweep of {cfg.cluster}")
        ]
        if self.quiet is not None:
            jobs.append((self.catch_up, cfg.pending_check_s, f"watch quiet-hours catch-up of {cfg.cluster}"))
        if self.reads is not None:
            jobs.append((self.check_pending, cfg.pending_check_s, f"watch pending check of {cfg.cluster}"))
            if cfg.stream:
                jobs.append((self.follow_stream, cfg.stream_poll_s, f"watch stream of {cfg.cluster}"))
        return jobs

    async def catch_up(self) -> SweepResult | None:
        """Once the quiet hours are over, look again for what they held back and post what is still
        there (a problem that went away overnight is not posted in the morning). ``None``: nothing
        was held back, or it is still quiet."""
        if not self.deferred or (self.quiet is not None and self.quiet.active(self.clock())):
            return None
        if not self.is_leader():
            return None
        self.deferred.clear()
        result = await self.sweep()
        if self.reads is not None:
            pending = await self.check_pending()
            result.posted += pending.posted
            result.deferred += pending.deferred
        return result

    async def sweep(self) -> SweepResult:
        """Run node-status once and bring the channel's messages in line with what it found."""
        cfg = self.config
        if not self.is_leader():
            return SweepResult(skipped=True)
        report = await self.fleet.node_status(cfg.cluster, not_before=self._last_sweep_end)
        self._last_sweep_end = self.fleet.clock()
        self.sweeps += 1
        found = problems_from_report(report, cluster=cfg.cluster, codes=cfg.codes)
        return await self.reconcile(found, _visible(report), what="watch sweep")

    async def check_pending(self) -> SweepResult:
        """The ``pending_after`` trigger: why-pending for each GPU workload (or bare pod) Pending
        longer than ``pending_after_s``; one problem per workload, resolved once it schedules."""
        cfg = self.config
        if self.reads is None:
            return SweepResult()
        if not self.is_leader():
            return SweepResult(skipped=True)
        groups = await pending_groups(self.reads())
        now = self.clock()
        due = [g for g in groups if (now - g.since).total_seconds() >= cfg.pending_after_s]
        pairs: list[tuple[Problem, str]] = []
        diagnosed: set[str] = set()
        for group in due[: cfg.pending_max_diagnoses]:
            try:
                report = await self.service.run(group.invocation(cfg.cluster))
            except Exception:
                log.exception("watch: why-pending of %s failed", group.label)
                continue
            diagnosed.add(group.subject)
            problem = pending_problem(report, group, cluster=cfg.cluster)
            if problem is not None:
                pairs.append((problem, group.label))
                diagnosed.add(problem.subject)
        found = merge_queue_problems(pairs)
        waiting = {g.subject for g in groups}
        # a queue's workloads not all diagnosed this round (the per-round cap) may still wait in it
        every_due_diagnosed = len(due) <= cfg.pending_max_diagnoses

        def visible(problem: Problem) -> bool:
            # a workload still waiting but not diagnosed this round keeps its message as it is
            subject = problem.subject
            if subject.startswith("queue/"):
                return subject in diagnosed or every_due_diagnosed
            return subject.startswith(PENDING_SUBJECTS) and (subject not in waiting or subject in diagnosed)

        return await self.reconcile(found, visible, what="watch pending check")

    async def follow_stream(self) -> SweepResult | None:
        """One poll of the watch-fed cache (``bot.proactive.stream``); once a batch of nodes that
        turned bad has waited out the debounce, one node-status over them. ``None``: nothing due
        (or no watch-fed cache to poll: the periodic sweep still covers every node)."""
        if not self.is_leader():
            # a follower keeps no picture: once it leads, its first poll learns the state afresh
            self.stream = NodeStream(debounce_s=self.config.stream_debounce_s)
            return None
        reads = self.reads() if self.reads is not None else None
        if not isinstance(reads, WatchCache):
            return None
        triggered = await self.stream.poll(reads)
        if triggered:
            log_event(log, "watch stream: nodes turned bad", cluster=self.config.cluster, nodes=len(triggered))
        due = self.stream.due()
        if not due:
            return None
        return await self.diagnose_nodes(sorted(due))

    async def diagnose_nodes(self, nodes: list[str]) -> SweepResult:
        """node-status over ``nodes`` only; may resolve only those nodes' problems."""
        cfg = self.config
        inv = Invocation(command="node-status", nodes=tuple(nodes), cluster=cfg.cluster, surface="slack")
        report = await self.service.run(inv)
        found = problems_from_report(report, cluster=cfg.cluster, codes=cfg.codes)
        seen_here = _visible(report)
        asked = {f"node/{n}" for n in nodes}
        return await self.reconcile(found, lambda p: p.subject in asked and seen_here(p), what="watch stream")

    async def reconcile(self, problems: list[Problem], visible: Callable[[Problem], bool], *, what: str) -> SweepResult:
        """Post what is new, edit what changed, resolve what ``visible`` says could have been seen
        and is gone. Every trigger (sweep, pending check, stream) comes through here: one set of
        rules. A new problem goes to the channel its namespace routes to; a known one stays in the
        channel it was posted to."""
        # the triggers run as separate jobs: two of them finding the same new node problem at
        # once must not both post it, so what is known and what is posted is decided one at a time
        async with self._posting:
            return await self._reconcile(problems, visible, what=what)

    async def _reconcile(
        self, problems: list[Problem], visible: Callable[[Problem], bool], *, what: str
    ) -> SweepResult:
        cfg = self.config
        if not self.is_leader():  # the lease was lost while this trigger read the cluster
            return SweepResult(skipped=True)
        now = self.clock()
        found = {p.fingerprint: p for p in problems}
        busy = await self._busy_nodes(found.values(), what=what)
        if busy:
            # a node gpubot is restarting is not Ready, by design: neither post, edit nor resolve it
            held_back = [fp for fp, p in found.items() if _node_of(p) in busy]
            for fp in held_back:
                del found[fp]
            shown = visible

            def visible(problem: Problem) -> bool:
                return _node_of(problem) not in busy and shown(problem)

        known: dict[str, OpenProblem] = {}
        for channel in self.router.channels:
            for fp, row in self.store.open_problems(cfg.cluster, channel).items():
                known.setdefault(fp, row)
        routes = await self._routes(found.values())
        result = SweepResult(acting=held_back if busy else [])
        held: dict[str, list[Problem]] = {}
        for fp, problem in found.items():
            await self._seen(problem, known.get(fp), routes[fp], now, result, held)
        for channel, waiting in held.items():
            await self._summarise(channel, waiting, now, result)
        for fp, row in known.items():
            if fp not in found and visible(row.problem):
                await self._gone(row, now, result)
        log_event(
            log,
            what,
            cluster=cfg.cluster,
            channel=cfg.channel,
            posted=len(result.posted),
            changed=len(result.changed),
            resolved=len(result.resolved),
            open=len(found),
            failed=len(result.failed),
            acting=len(result.acting),
        )
        return result

    async def _busy_nodes(self, problems: Iterable[Problem], *, what: str) -> dict[str, str]:
        """The nodes of these problems a gpubot action holds now, each logged as not reported."""
        nodes = sorted({n for n in (_node_of(p) for p in problems) if n})
        if self.acting is None or not nodes:
            return {}
        try:
            busy = await self.acting(self.config.cluster, nodes)
        except Exception:  # noqa: BLE001 - an unreadable lock must not stop the watch: report as usual
            log.warning("watch: could not read which nodes gpubot is acting on; reporting them all")
            return {}
        for node, doing in sorted(busy.items()):
            log_event(
                log, f"{what}: node not reported, gpubot is acting on it", cluster=self.config.cluster,
                node=node, action=doing,
            )
        return busy

    async def _routes(self, problems: Iterable[Problem]) -> dict[str, Route]:
        """Each problem's channel and owner; namespaces are read (from the cache) only when a
        problem names one."""
        problems = list(problems)
        names = {namespace_of(p.subject) for p in problems} - {""}
        namespaces: dict[str, Obj] = {}
        if names and self.reads is not None:
            try:
                for ns in await self.reads().list_namespaces():
                    name = name_of(ns)
                    if name in names:
                        namespaces[name] = ns
            except Exception:  # routing falls back to the watch's channel; the post still goes out
                log.exception("watch: could not read namespaces for routing")
        return {p.fingerprint: self.router.route(namespaces.get(namespace_of(p.subject))) for p in problems}

    async def _seen(
        self,
        problem: Problem,
        row: OpenProblem | None,
        route: Route,
        now: datetime,
        result: SweepResult,
        held: dict[str, list[Problem]],
    ) -> None:
        channel = row.channel if row is not None else route.channel
        fp = problem.fingerprint
        if (row is None or row.digest != problem.digest) and self.store.snoozed(fp, channel=channel, now=now):
            result.snoozed.append(fp)
            return
        if row is None and self.quiet is not None and self.quiet.holds(problem.severity, now):
            self.deferred[fp] = problem
            result.deferred.append(fp)
            return
        if row is None and self.store.posts_since(channel, now - HOUR) >= self.posts_per_hour:
            held.setdefault(channel, []).append(problem)
            result.held.append(fp)
            return
        try:
            if row is None:
                await self.once.open(problem, channel, now=now, owner=route.owner)
                result.posted.append(fp)
            elif row.posting:
                outcome = await self.once.finish(problem, row, now=now, owner=route.owner)
                getattr(result, outcome).append(fp)  # posted, changed or unchanged
            elif row.digest != problem.digest:
                await self.notifier.update_open(
                    channel,
                    row.message_ts,
                    row.problem,
                    problem,
                    opened_at=row.opened_at,
                    seen_at=now,
                    owner=route.owner,
                )
                self.store.changed(problem, channel=channel, at=now)
                result.changed.append(fp)
            else:
                result.unchanged.append(fp)
        except Exception:
            log.exception("watch: could not post problem %s (%s)", problem.code, problem.subject)
            result.failed.append(fp)

    async def _summarise(self, channel: str, held: list[Problem], now: datetime, result: SweepResult) -> None:
        try:
            await self.once.summarise(channel, held, now=now, limit=self.posts_per_hour)
        except Exception:
            log.exception("watch: could not post the rate-limit summary of %s", channel)
            result.failed.extend(p.fingerprint for p in held)

    async def _gone(self, row: OpenProblem, now: datetime, result: SweepResult) -> None:
        fp = row.problem.fingerprint
        try:
            if row.posting:
                shown = await self.once.shown(row)
                if shown is None:  # never shown in the channel: nothing to edit
                    self.store.resolved(fp, channel=row.channel, at=now)
                    result.resolved.append(fp)
                    return
                row = shown
            await self.notifier.resolve(
                row.channel, row.message_ts, row.problem, opened_at=row.opened_at, resolved_at=now
            )
            self.store.resolved(fp, channel=row.channel, at=now)
            self.store.end_snoozes_until_resolved(fp, channel=row.channel)
            result.resolved.append(fp)
        except Exception:
            log.exception("watch: could not mark problem %s (%s) resolved", row.problem.code, row.problem.subject)
            result.failed.append(fp)


#: the snooze buttons' choices -> how long (``None``: until the problem resolves)
SNOOZES: dict[str, timedelta | None] = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "resolved": None}


class Snoozer:
    """What a snooze button does: remember the snooze in the store (so a restart keeps it)."""

    def __init__(self, store: ProblemStore, *, clock: Callable[[], datetime] = _now) -> None:
        self.store = store
        self.clock = clock

    def snooze(self, fingerprint: str, *, channel: str, choice: str, by: str) -> datetime | None:
        """Snooze and return until when (``None``: until resolved); ``KeyError`` on a bad choice."""
        span = SNOOZES[choice]
        now = self.clock()
        until = now + span if span is not None else None
        self.store.snooze(fingerprint, channel=channel, until=until, by=by, at=now)
        log_event(log, "watch snoozed", fingerprint=fingerprint, channel=channel, choice=choice, by=by)
        return until


def _node_of(problem: Problem) -> str:
    return problem.subject.removeprefix("node/") if problem.subject.startswith("node/") else ""


def _visible(report: Report) -> Callable[[Problem], bool]:
    """Whether this sweep could have seen the problem: absence only counts where we looked (and a
    pending workload is the pending check's to resolve, never the node sweep's). A report missing
    more than some nodes' reads (a list that failed, a check that raised, the deadline cutting a
    loader) proves no absence at all: under load a sweep must not resolve what it could not check."""
    if any(not s.node_read for s in report.skipped):
        return lambda problem: False
    read_nodes = {f"node/{row.node}" for row in report.nodes if row.ssh == "ok"}
    listed_any = bool(report.nodes)

    def visible(problem: Problem) -> bool:
        if problem.subject.startswith(PENDING_SUBJECTS):
            return False
        if problem.subject.startswith("node/"):
            return problem.subject in read_nodes
        return listed_any

    return visible
