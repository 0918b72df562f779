"""Gathering facts: which loaders a set of checks needs, and running them in dependency order.

Each loader fills one base fact of ``bot.engine.facts.Facts`` through the read-only probes. The
runner asks for the facts its checks declare; this module adds what those facts rest on and runs
independent loaders concurrently. A loader that fails becomes a ``skipped`` entry, leaves its fact
empty and marks it unreadable (``Facts.unreadable``), with the failed read and its class (refused,
TLS, timeout, 401, 403, 5xx/429) in ``Facts.failures``: the rest of the report still stands, and
no check concludes from the empty fact. A loader whose inputs could not be read does not run.
All of it happens within the command's deadline, which every read sees (``bot.probes.deadline``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from bot.engine.facts import DERIVED, EventFacts, Facts, GpuComponents, QuotaFacts, TargetFacts
from bot.engine.gather import container, kube, node, queues
from bot.engine.gather.sources import NO_EXEC, Sources
from bot.engine.queue_facts import DraFacts, QueueFacts
from bot.errors import GpubotError, KubeApiError
from bot.probes.deadline import until
from bot.report import DEADLINE_SKIP, NODE_READ_SKIP, Unreadable

log = logging.getLogger(__name__)

LoadFn = Callable[[Facts, Sources], Awaitable[None]]


@dataclass(frozen=True)
class Loader:
    """How one base fact is read: the function, the facts it rests on, and what the fact is when the
    read fails, so a failed read shows as nothing known rather than as a crash."""

    fn: LoadFn
    #: base facts this loader reads
    needs: tuple[str, ...] = ()
    #: the value the fact takes when the loader fails (so checks see "nothing", not a crash)
    empty: Callable[[], object] = dict
    #: how a failed load is named in the report's "skipped" list
    label: str = ""
    #: needs that only widen what it reads: when one could not be read the loader still runs,
    #: and its fact stands for what it covers (the checks that read the unread need itself skip)
    soft: tuple[str, ...] = ()
    #: the report entries ("what") of the parts the fact covers, for naming each one that was not
    #: read when the loader as a whole was not taken (failed, cancelled, or its inputs unread):
    #: an operator counts unread nodes by name, not from one line that says "node readings"
    parts: Callable[[Facts], list[str]] | None = None

    def named_parts(self, facts: Facts) -> list[str]:
        """The entries of the parts this fact covers (none where unknown or not declared)."""
        return self.parts(facts) if self.parts is not None else []

    def not_taken(self, facts: Facts, why: str) -> None:
        """Say in the report that this loader's fact was not read, part by part where it can."""
        for what in self.named_parts(facts) or [self.label]:
            facts.skip(what, why)


LOADERS: dict[str, Loader] = {
    "target": Loader(kube.target, (), lambda: TargetFacts("", "", ""), "the pod or workload"),
    "events": Loader(kube.events, ("target",), EventFacts, "events"),
    "namespaces": Loader(kube.namespaces, (), dict, "namespaces"),
    "nodes": Loader(kube.nodes, (), dict, "nodes"),
    "components": Loader(kube.components, (), GpuComponents, "GPU components (device plugins, qGPU, operator)"),
    "quotas": Loader(kube.quotas, ("target",), QuotaFacts, "resource quotas"),
    "queues": Loader(queues.queues, ("target",), QueueFacts, "batch queues and DRA claims"),
    "dra_inventory": Loader(queues.dra_inventory, (), DraFacts, "DRA devices (ResourceSlices, ResourceClaims)"),
    "peers": Loader(kube.peers, ("target", "events"), list, "pods the pod's affinity rules name", soft=("events",)),
    "node_pods": Loader(kube.node_pods, ("target", "nodes", "components"), dict, "pods on GPU nodes"),
    "node_readings": Loader(
        node.readings, ("target", "nodes", "components", "node_pods"), dict, "node readings",
        parts=lambda facts: [f"{NODE_READ_SKIP} {n}" for n in node.unread_scope(facts)],
    ),
    "containers": Loader(container.containers, ("target",), lambda: None, "reads inside the containers"),
}

#: every name a check may declare in ``reads``
FACT_NAMES: frozenset[str] = frozenset(LOADERS) | frozenset(DERIVED)


def direct_facts(reads: Iterable[str]) -> set[str]:
    """The base facts ``reads`` name (derived names expanded), not what their loaders need: a
    loader whose input could not be read marks its own fact unreadable, so this is enough to
    know whether a check rests on something unknown."""
    return {b for name in reads for b in DERIVED.get(name, (name,))}


def base_facts(reads: Iterable[str]) -> set[str]:
    """The base facts behind ``reads`` (derived names expanded), closed over loader needs."""
    todo = [b for name in reads for b in DERIVED.get(name, (name,))]
    out: set[str] = set()
    while todo:
        name = todo.pop()
        if name in out:
            continue
        if name not in LOADERS:
            raise KeyError(f"unknown fact {name!r}")
        out.add(name)
        todo.extend(LOADERS[name].needs)
    return out


def levels(names: set[str]) -> list[list[str]]:
    """Loaders grouped so each runs after the loaders it needs."""
    remaining = sorted(names)
    done: set[str] = set()
    out: list[list[str]] = []
    while remaining:
        ready = [n for n in remaining if all(d in done or d not in names for d in LOADERS[n].needs)]
        out.append(ready)
        done.update(ready)
        remaining = [n for n in remaining if n not in done]
    return out


async def _load(name: str, facts: Facts, sources: Sources) -> None:
    loader = LOADERS[name]
    unread = sorted(n for n in loader.needs if n in facts.unreadable and n not in loader.soft)
    if unread:
        # what it would read rests on facts nobody knows: reading it would only look like an answer
        # (the unread input is in the report already; the parts are named so each is accounted for)
        why = "not read: it rests on " + ", ".join(LOADERS[n].label for n in unread) + ", which could not be read"
        for what in loader.named_parts(facts):
            facts.skip(what, why)
        facts.cannot_read(name)
        facts.put(name, loader.empty())
        return
    try:
        await loader.fn(facts, sources)
    except KubeApiError as exc:
        loader.not_taken(facts, exc.user_message)
        facts.cannot_read(name, Unreadable.of(exc, loader.label))
    except GpubotError as exc:
        loader.not_taken(facts, exc.user_message)
        facts.cannot_read(name, Unreadable(loader.label, "failed", exc.user_message))
    except Exception as exc:  # noqa: BLE001 - a broken loader must not sink the report
        log.exception("loading fact %s failed", name)
        why = f"internal error ({type(exc).__name__})"
        loader.not_taken(facts, why)
        facts.cannot_read(name, Unreadable(loader.label, "internal", why + "; rerun with -v"))
    else:
        if not facts.gathered(name):
            facts.put(name, loader.empty())
        return
    facts.put(name, loader.empty())  # whatever it filled before failing is not the fact


#: beyond the command deadline, how long loaders that keep their own deadline may take to hand in
GRACE_S = 0.5


async def gather(facts: Facts, sources: Sources, reads: Iterable[str]) -> None:
    """Fill every base fact ``reads`` rests on, within ``facts.deadline`` when one is set.

    A loader still running at the deadline is cancelled; its fact stays empty and the report says
    it was skipped. The node loader hands in what it has before then (per-node results). Facts
    already there (``Facts.share``) are not read again. Where the asked pod or workload turns out
    not to exist (``Facts.no_subject``), the reads still going are cancelled and the rest are not
    started: they are not needed (``Facts.not_needed``), and a typo is answered without waiting
    for every node of a large cluster (at 5,000 nodes, ~0.3 s of ~0.4 s).
    """
    todo = levels({name for name in base_facts(reads) if not facts.gathered(name)})
    for index, level in enumerate(todo):
        sources.progress("reading " + ", ".join(LOADERS[name].label for name in level))
        with until(facts.deadline):  # the tasks copy the deadline with the context
            tasks = {asyncio.ensure_future(_load(name, facts, sources)): name for name in level}
        timeout = None if facts.deadline is None else max(0.0, facts.deadline - time.monotonic()) + GRACE_S
        target = next((task for task, name in tasks.items() if name == "target"), None)
        pending = await _settled(tasks, facts, timeout, target)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if target is not None and target not in pending and facts.no_subject():
            unread = [tasks[t] for t in pending] + [name for later in todo[index + 1:] for name in later]
            for name in unread:
                facts.not_needed.add(name)
                facts.put(name, LOADERS[name].empty())
            return
        for task in pending:
            name = tasks[task]
            loader = LOADERS[name]
            late = "not finished within the command's deadline"
            loader.not_taken(facts, DEADLINE_SKIP if loader.named_parts(facts) else late)
            facts.cannot_read(name, Unreadable(loader.label, "timeout", late))
            facts.put(name, loader.empty())


async def _settled(
    tasks: Iterable[asyncio.Task[None]], facts: Facts, timeout: float | None, target: asyncio.Task[None] | None
) -> set[asyncio.Task[None]]:
    """Wait for every task, at most ``timeout`` seconds, or until the ``target`` loader has found
    that the question has no subject; what is still running."""
    end = None if timeout is None else time.monotonic() + timeout
    pending = set(tasks)
    while pending:
        left = None if end is None else max(0.0, end - time.monotonic())
        done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        if not done or (target in done and facts.no_subject()):
            break
    return pending


__all__ = [
    "FACT_NAMES", "LOADERS", "NO_EXEC", "Loader", "Sources", "base_facts", "direct_facts", "gather", "levels",
]
