"""Watch-stream triggers: GPU nodes that just turned bad, seen in the watch-fed cache.

The cache (``bot.probes.cache.WatchCache``) keeps nodes and DaemonSets current from its watch
streams. Rather than a callback inside the cache's reflector threads (which would couple this
module to the cache's internals, and run our code on its threads under its lock), ``NodeStream``
*polls* the cache's copies every few seconds and diffs them: a list of references to objects
already in memory, and per node only a resourceVersion comparison unless it changed. No API
request is made for nodes; device-plugin pods are listed (label-selected, from the API) only when
a plugin DaemonSet's ready count drops.

A change is a trigger when a GPU node (one that reports a GPU resource):

- turns not Ready (NotReady or Unknown);
- reports less allocatable than capacity for a GPU resource (cards marked unhealthy, a plugin
  that stopped);
- runs a device-plugin pod that starts crash-looping (a container waiting in CrashLoopBackOff).

A node turning good again (Ready, full allocatable) is a trigger too, so its post is resolved
within seconds rather than at the next sweep. The first poll only learns the current state, and
so does the first sight of a node that joins later (a new node is NotReady while it boots): what
is already wrong then is the periodic sweep's to post.

Triggered nodes are batched: ``due`` hands them out once ``debounce_s`` has passed since the
first of them, so a burst of events (a rack losing power) is one node-status over all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bot.engine.node_rows import ready_condition
from bot.kube.gpu_stack import plugin_daemonsets
from bot.kube.objects import Obj, meta_of
from bot.kube.pod_status import crash_looping
from bot.kube.resources import node_gpu_capacity
from bot.kube.selectors import selector_string


class CachedReads(Protocol):
    """What the stream reads of the watch-fed cache."""

    @property
    def ready(self) -> bool: ...

    def fresh(self, kind: str) -> bool: ...

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]: ...

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]: ...

    async def list_pods(
        self, namespace: str = "", *, label_selector: str = "", field_selector: str = ""
    ) -> list[Obj]: ...


@dataclass(frozen=True)
class NodeState:
    """What the stream compares per GPU node."""

    ready: bool
    #: some GPU resource has less allocatable than capacity
    short: bool



def node_state(node: Obj) -> NodeState | None:
    """The node's state, or ``None`` for a node with no GPU resource."""
    gpus = node_gpu_capacity(node)
    if not gpus:
        return None
    short = any(alloc < capacity for capacity, alloc in gpus.values())
    return NodeState(ready=ready_condition(node)[0], short=short)


def _selector(ds: Mapping[str, Any]) -> str:
    return selector_string((ds.get("spec") or {}).get("selector"))


class NodeStream:
    """Diffs the cache's GPU nodes and device-plugin DaemonSets between polls; batches triggers."""

    def __init__(self, *, debounce_s: float = 3.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.debounce_s = debounce_s
        self.clock = clock
        #: node name -> (resourceVersion, state) as last seen; ``None`` before the first poll
        self._nodes: dict[str, tuple[str, NodeState]] | None = None
        #: plugin DaemonSet (namespace, name) -> number ready, as last seen
        self._plugins: dict[tuple[str, str], int] = {}
        #: plugin pods (namespace, name) seen crash-looping
        self._crashing: set[tuple[str, str]] = set()
        #: triggered nodes -> why, waiting for the debounce
        self.batch: dict[str, list[str]] = {}
        self._batch_since: float | None = None
        #: polls and triggers so far (logged, read by tests)
        self.polls = 0

    async def poll(self, cache: CachedReads) -> dict[str, str]:
        """Diff the cache against the last poll; returns the nodes that just turned bad (and why),
        already added to the batch. Nothing while the cache is not ready and fresh."""
        if not (cache.ready and cache.fresh("Node") and cache.fresh("DaemonSet")):
            return {}
        self.polls += 1
        triggered = self._diff_nodes(await cache.list_nodes())
        for node, why in (await self._plugin_crashes(cache)).items():
            triggered.setdefault(node, why)
        for node, why in triggered.items():
            self.batch.setdefault(node, []).append(why)
        if triggered and self._batch_since is None:
            self._batch_since = self.clock()
        return triggered

    def due(self) -> dict[str, list[str]]:
        """The batched nodes once ``debounce_s`` has passed since the first of them (then empty)."""
        if self._batch_since is None or self.clock() - self._batch_since < self.debounce_s:
            return {}
        out, self.batch, self._batch_since = self.batch, {}, None
        return out

    def _diff_nodes(self, nodes: Iterable[Obj]) -> dict[str, str]:
        before = self._nodes
        now: dict[str, tuple[str, NodeState]] = {}
        triggered: dict[str, str] = {}
        for node in nodes:
            meta = meta_of(node)
            name, rv = str(meta.get("name") or ""), str(meta.get("resourceVersion") or "")
            old = before.get(name) if before is not None else None
            if old is not None and old[0] == rv:
                now[name] = old  # unchanged object: no parsing
                continue
            state = node_state(node)
            if state is None:
                continue
            now[name] = (rv, state)
            if old is None:  # first seen (start, or a node joining: NotReady while it boots)
                continue
            was = old[1]
            if was.ready and not state.ready:
                triggered[name] = f"Ready turned {ready_condition(node)[1]}"
            elif not was.short and state.short:
                triggered[name] = "allocatable GPUs dropped below capacity"
            elif state != was:  # back to Ready or to full allocatable: a look resolves its post now
                triggered[name] = "recovered"
        self._nodes = now
        return triggered

    async def _plugin_crashes(self, cache: CachedReads) -> dict[str, str]:
        """Nodes whose device-plugin pod just started crash-looping; pods are listed only for a
        plugin DaemonSet whose ready count dropped since the last poll."""
        first = not self._plugins and self.polls == 1
        out: dict[str, str] = {}
        seen: dict[tuple[str, str], int] = {}
        for ds in plugin_daemonsets(await cache.list_daemonsets()):
            meta = meta_of(ds)
            key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            ready = int((ds.get("status") or {}).get("numberReady") or 0)
            seen[key] = ready
            dropped = key in self._plugins and ready < self._plugins[key]
            if not (dropped or first) or not _selector(ds):
                continue
            pods = await cache.list_pods(key[0], label_selector=_selector(ds))
            for pod in pods:
                pod_key = (key[0], str(meta_of(pod).get("name") or ""))
                if not crash_looping(pod):
                    self._crashing.discard(pod_key)
                    continue
                node = str((pod.get("spec") or {}).get("nodeName") or "")
                if pod_key not in self._crashing and node and not first:
                    out[node] = f"device plugin pod {pod_key[0]}/{pod_key[1]} is crash-looping"
                self._crashing.add(pod_key)
        self._plugins = seen
        return out
