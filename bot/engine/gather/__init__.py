"""Gathering facts: which loaders a set of checks needs, and running them in dependency order.

Each loader fills one base fact of ``bot.engine.facts.Facts`` through the read-only probes. The
runner asks for the facts its checks declare; this module adds what those facts rest on and runs
independent loaders concurrently. A loader that fails becomes a ``skipped`` entry and leaves its
fact empty, so the rest of the report still stands; one refused with 403 (the reader's own RBAC,
under per-user authority) also marks its fact ``forbidden``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from bot.engine.facts import DERIVED, EventFacts, Facts, GpuComponents, QuotaFacts, TargetFacts
from bot.engine.gather import container, kube, node
from bot.engine.gather.sources import NO_EXEC, Sources
from bot.errors import GpubotError, KubeApiError

log = logging.getLogger(__name__)

LoadFn = Callable[[Facts, Sources], Awaitable[None]]


@dataclass(frozen=True)
class Loader:
    fn: LoadFn
    #: base facts this loader reads
    needs: tuple[str, ...] = ()
    #: the value the fact takes when the loader fails (so checks see "nothing", not a crash)
    empty: Callable[[], object] = dict
    #: how a failed load is named in the report's "skipped" list
    label: str = ""


LOADERS: dict[str, Loader] = {
    "target": Loader(kube.target, (), lambda: TargetFacts("", "", ""), "the pod or workload"),
    "events": Loader(kube.events, ("target",), EventFacts, "events"),
    "namespaces": Loader(kube.namespaces, (), dict, "namespaces"),
    "nodes": Loader(kube.nodes, (), dict, "nodes"),
    "components": Loader(kube.components, (), GpuComponents, "GPU components (device plugins, qGPU, operator)"),
    "quotas": Loader(kube.quotas, ("target",), QuotaFacts, "resource quotas"),
    "peers": Loader(kube.peers, ("target", "events"), list, "pods the pod's affinity rules name"),
    "node_pods": Loader(kube.node_pods, ("target", "nodes", "components"), dict, "pods on GPU nodes"),
    "node_readings": Loader(node.readings, ("target", "nodes", "components", "node_pods"), dict, "node readings"),
    "containers": Loader(container.containers, ("target",), lambda: None, "reads inside the containers"),
}

#: every name a check may declare in ``reads``
FACT_NAMES: frozenset[str] = frozenset(LOADERS) | frozenset(DERIVED)


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
        ready = [n for n in remaining if all(d in done for d in LOADERS[n].needs)]
        out.append(ready)
        done.update(ready)
        remaining = [n for n in remaining if n not in done]
    return out


async def _load(name: str, facts: Facts, sources: Sources) -> None:
    loader = LOADERS[name]
    try:
        await loader.fn(facts, sources)
    except GpubotError as exc:
        facts.skip(loader.label, exc.user_message)
        if isinstance(exc, KubeApiError) and exc.status == 403:
            facts.forbidden.add(name)
    except Exception as exc:  # noqa: BLE001 - a broken loader must not sink the report
        log.exception("loading fact %s failed", name)
        facts.skip(loader.label, f"internal error ({type(exc).__name__})")
    if not facts.gathered(name):
        facts.put(name, loader.empty())


#: beyond the command deadline, how long loaders that keep their own deadline may take to hand in
GRACE_S = 0.5


async def gather(facts: Facts, sources: Sources, reads: Iterable[str]) -> None:
    """Fill every base fact ``reads`` rests on, within ``facts.deadline`` when one is set.

    A loader still running at the deadline is cancelled; its fact stays empty and the report says
    it was skipped. The node loader hands in what it has before then (per-node results).
    """
    for level in levels(base_facts(reads)):
        sources.progress("reading " + ", ".join(LOADERS[name].label for name in level))
        tasks = {asyncio.ensure_future(_load(name, facts, sources)): name for name in level}
        timeout = None if facts.deadline is None else max(0.0, facts.deadline - time.monotonic()) + GRACE_S
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for task in pending:
            name = tasks[task]
            facts.skip(LOADERS[name].label, "not finished within the command's deadline")
            if not facts.gathered(name):
                facts.put(name, LOADERS[name].empty())


__all__ = ["FACT_NAMES", "LOADERS", "NO_EXEC", "Loader", "Sources", "base_facts", "gather", "levels"]
