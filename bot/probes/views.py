"""The reads interface's derived views, with their plain implementations over the basic reads.

``KubeReads`` has basic reads (get, list) and a few views derived from them that the loaders ask
for by name: every node by name (``node_map``), the pods of a GPU-stack controller
(``component_pods``), the pods bound to some nodes as slim records (``slim_pods_by_node``). A reader
that keeps an index (the watch-fed cache) answers them from it; every other reader inherits
``DerivedViews``, which derives them from its own basic reads, so a memoizing wrapper's memo is
shared with every other loader's reads. ``Kept`` is how the interface tells an indexing reader what
the views are about, so the cache does not import the rules that decide it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.errors import KubeApiError
from bot.kube.objects import Obj, name_of, namespace_of
from bot.kube.selectors import selector_string
from bot.probes.slim import SlimPod, slim

#: told of each read that failed, before the first failure is raised (``slim_pods_by_node``)
FailedRead = Callable[[KubeApiError], None]

#: with more nodes than this, pods are read cluster-wide once (``slim_pods``) instead of node by node
PER_NODE_LIST_LIMIT = 16


def _no_node(node: Obj) -> bool:
    return False


def _no_owner(name: str, labels: Mapping[str, str]) -> bool:
    return False


@dataclass(frozen=True)
class Kept:
    """What an indexing reader keeps for the views, declared by whoever wires it up.

    ``node_mark``: nodes to mark as their events arrive (``NodeMap.marked``); ``whole_pods_of``:
    controllers (by name and labels) whose pods are kept whole for ``component_pods``.
    """

    node_mark: Callable[[Obj], bool] = _no_node
    whole_pods_of: Callable[[str, Mapping[str, str]], bool] = _no_owner


#: an indexing reader that was told nothing: no marks, no pods kept whole (the views still answer)
KEEP_NOTHING = Kept()


class _Basics(Protocol):
    """The basic reads the derived views are written over."""

    async def list_pods(
        self, namespace: str = "", *, label_selector: str = "", field_selector: str = ""
    ) -> list[Obj]: ...

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]: ...

    async def slim_pods(
        self, *, field_selector: str = "", nodes: set[str] | None = None, all_nodes: int = 0
    ) -> list[SlimPod]: ...


def by_name(objects: list[Obj]) -> dict[str, Obj]:
    """``objects`` by ``metadata.name`` (``name_of``). Indexed directly while every object has a
    string name, as every object an API server serves has: ``name_of`` costs two calls an object,
    ~4 ms of a cold diagnosis at 5,000 nodes."""
    try:
        found = {obj["metadata"]["name"]: obj for obj in objects}
        if all(type(name) is str for name in found):
            return found
    except (KeyError, TypeError):
        pass
    return {name_of(obj): obj for obj in objects}


class DerivedViews:
    """The views derived from the basic reads of whatever reader inherits this (see the module)."""

    async def node_map(self: _Basics) -> dict[str, Obj]:
        """Every node by name."""
        return by_name(await self.list_nodes())

    async def component_pods(self: _Basics, controller: Obj) -> list[Obj]:
        """The pods a controller's selector selects in its namespace; none without a selector."""
        selector = selector_string((controller.get("spec") or {}).get("selector"))
        if not selector:
            return []
        namespace = namespace_of(controller)
        return await self.list_pods(namespace, label_selector=selector)

    async def slim_pods_by_node(
        self: _Basics, nodes: Collection[str], *, all_nodes: int = 0, failed: FailedRead | None = None
    ) -> dict[str, list[SlimPod]]:
        """The pods bound to each of ``nodes`` (of ``all_nodes`` in the cluster), as slim records.

        Up to ``PER_NODE_LIST_LIMIT`` nodes, one field-selected list each: ``failed`` hears of every
        read that failed (so a report names all of them), then the first failure is raised.
        """
        by_node: dict[str, list[SlimPod]] = {n: [] for n in nodes}
        if len(by_node) <= PER_NODE_LIST_LIMIT:
            results = await asyncio.gather(
                *(self.list_pods(field_selector=f"spec.nodeName={n}") for n in sorted(by_node)),
                return_exceptions=True,
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                for err in errors:
                    if failed is not None and isinstance(err, KubeApiError):
                        failed(err)
                raise errors[0]
            pods = [slim(p) for batch in results if not isinstance(batch, BaseException) for p in batch]
        else:
            pods = await self.slim_pods(nodes=set(by_node), all_nodes=all_nodes)
        for p in pods:
            if p.node in by_node:
                by_node[p.node].append(p)
        return by_node
