"""One read per question for many diagnoses: a memo in front of ``KubeReads``.

``gpubot pending`` runs the why-pending engine for many workloads; each diagnosis asks for the same
lists (the namespace's ReplicaSets, the pods of a selector, a quota) and, per pod, for the events
about it. Through this facade each distinct read is made once (concurrent askers share the one
call). Events are read as why-pending reads them, field-selected by the object they are about:
a namespace can hold tens of thousands of events, and only the diagnosed workloads' are needed. A
failed read is remembered as failed: every diagnosis resting on it says so, none retries it (the
answer's deadline is shared). Reads only, like what it wraps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Hashable
from typing import Any

from bot.kube.objects import Obj, meta_of
from bot.probes.kube import KubeReads
from bot.probes.slim import SlimPod
from bot.probes.views import DerivedViews, FailedRead


class SharedReads(DerivedViews):
    """A ``KubeReads`` whose identical reads are made once per instance (one instance per answer).

    The derived views (``bot.probes.views``) of a reader that derives them are derived here, over
    the memoized reads; those of an indexing reader (the watch-fed cache) are its own, memoized.
    """

    def __init__(self, inner: KubeReads, *, pods: dict[tuple[str, str], Obj] | None = None) -> None:
        self._inner = inner
        self._memo: dict[Hashable, asyncio.Future[Any]] = {}
        #: pods already listed for the scan, by (namespace, name): ``get_object("Pod")`` needs no call
        self._pods = pods or {}
        #: how many reads went to the API (the benchmark and the tests count them)
        self.calls = 0

    async def slim_pods(self, *, field_selector: str = "", nodes: set[str] | None = None,
                        all_nodes: int = 0) -> list[SlimPod]:
        result: list[SlimPod] = await self._once(
            ("slim", field_selector, tuple(sorted(nodes)) if nodes is not None else None),
            lambda: self._inner.slim_pods(field_selector=field_selector, nodes=nodes, all_nodes=all_nodes))
        return result

    async def node_map(self) -> dict[str, Obj]:
        if isinstance(self._inner, DerivedViews):
            return await super().node_map()
        result: dict[str, Obj] = await self._once(("node_map",), self._inner.node_map)
        return result

    async def component_pods(self, controller: Obj) -> list[Obj]:
        if isinstance(self._inner, DerivedViews):
            return await super().component_pods(controller)
        meta = meta_of(controller)
        key = ("component_pods", controller.get("kind"), meta.get("namespace"), meta.get("name"), meta.get("uid"))
        result: list[Obj] = await self._once(key, lambda: self._inner.component_pods(controller))
        return result

    async def slim_pods_by_node(
        self, nodes: Collection[str], *, all_nodes: int = 0, failed: FailedRead | None = None
    ) -> dict[str, list[SlimPod]]:
        if isinstance(self._inner, DerivedViews):
            return await super().slim_pods_by_node(nodes, all_nodes=all_nodes, failed=failed)
        result: dict[str, list[SlimPod]] = await self._once(
            ("slim_pods_by_node", tuple(sorted(nodes)), all_nodes),
            lambda: self._inner.slim_pods_by_node(nodes, all_nodes=all_nodes, failed=failed))
        return result

    def know_pods(self, pods: list[Obj]) -> None:
        """Pods the scan already holds: ``get_object("Pod")`` on them makes no call."""
        for p in pods:
            meta = meta_of(p)
            self._pods[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = p

    async def _once(self, key: Hashable, read: Callable[[], Awaitable[Any]]) -> Any:
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = asyncio.ensure_future(self._count(read))
        return await asyncio.shield(found)

    async def _count(self, read: Callable[[], Awaitable[Any]]) -> Any:
        self.calls += 1
        return await read()

    async def get_object(self, kind: str, name: str, namespace: str = "") -> Obj:
        if kind == "Pod" and (namespace, name) in self._pods:
            return self._pods[(namespace, name)]
        result: Obj = await self._once(("get", kind, name, namespace),
                                       lambda: self._inner.get_object(kind, name, namespace))
        return result

    async def list_pods(self, namespace: str = "", *, label_selector: str = "", field_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(
            ("pods", namespace, label_selector, field_selector),
            lambda: self._inner.list_pods(namespace, label_selector=label_selector, field_selector=field_selector),
        )
        return result

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(("nodes", label_selector),
                                             lambda: self._inner.list_nodes(label_selector=label_selector))
        return result

    async def list_namespaces(self) -> list[Obj]:
        result: list[Obj] = await self._once(("namespaces",), self._inner.list_namespaces)
        return result

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(
            ("events", namespace, field_selector),
            lambda: self._inner.list_events(namespace, field_selector=field_selector),
        )
        return list(result)  # each diagnosis ages and orders its own list of a pod's events

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(("daemonsets", label_selector),
                                             lambda: self._inner.list_daemonsets(label_selector=label_selector))
        return result

    async def list_deployments(self, *, label_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(("deployments", label_selector),
                                             lambda: self._inner.list_deployments(label_selector=label_selector))
        return result

    async def list_replicasets(self, namespace: str, *, label_selector: str = "") -> list[Obj]:
        result: list[Obj] = await self._once(
            ("replicasets", namespace, label_selector),
            lambda: self._inner.list_replicasets(namespace, label_selector=label_selector),
        )
        return result

    async def list_resourcequotas(self, namespace: str) -> list[Obj]:
        result: list[Obj] = await self._once(("quotas", namespace), lambda: self._inner.list_resourcequotas(namespace))
        return result

    def __getattr__(self, name: str) -> Any:
        """What else the reader offers beyond ``KubeReads`` (the API reader's ``walk_pods``), memoized."""
        inner = getattr(self._inner, name)
        if not callable(inner):
            return inner

        async def call(*args: Any, **kwargs: Any) -> Any:
            key = (name, repr(args), repr(sorted(kwargs.items())))
            return await self._once(key, lambda: inner(*args, **kwargs))

        return call
