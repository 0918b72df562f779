"""Nodes by name with the names a predicate marked, worked out once: a view a reader can keep.

Generic on purpose: the watch-fed cache (``bot.probes.cache``) builds one per change of its nodes
with the predicate the reads interface handed it (``bot.probes.kube.Kept``), without importing the
rules that predicate comes from; ``bot.kube.gpu.gpu_node_names`` reuses the marks only when they
are its own (``mark is marks_gpu``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Obj = dict[str, Any]


class NodeMap(dict[str, Obj]):
    """Nodes by name, with ``marked``: the names ``mark`` accepted. The watch-fed cache marks each
    node as its watch event arrives and hands the same map to every question until the next change,
    so a question at 5,000 nodes does not classify every node again. Read-only: questions share it."""

    __slots__ = ("mark", "marked")

    def __init__(self, nodes: Mapping[str, Obj], marked: Iterable[str], mark: Callable[[Obj], bool]) -> None:
        """``marked``: the names ``mark`` accepted, kept up to date node by node by the caller."""
        super().__init__(nodes)
        self.marked: frozenset[str] = frozenset(marked)
        self.mark = mark
