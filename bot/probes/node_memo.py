"""One reading per node per question: a memo in front of a ``NodeTransport``.

``gpubot pending`` runs many diagnoses in one answer, and each reads the GPU nodes its pod could
use: mostly the same nodes. Through this memo each node is read once (concurrent askers share the
read; a failure is shared too: a node that did not answer is not asked again within the answer).
"""

from __future__ import annotations

import asyncio

from bot.probes.node import NodeTransport
from bot.probes.observation import NodeObservation


class NodeReadMemo:
    """The readings of one answer, by node; ``wrap`` puts it in front of a diagnosis's transport."""

    def __init__(self) -> None:
        self._reads: dict[str, asyncio.Future[NodeObservation]] = {}
        #: nodes actually read (the rest of the asks were answered from the memo)
        self.reads = 0

    def wrap(self, transport: NodeTransport) -> NodeTransport:
        return _Memoized(self, transport)

    async def observe(self, transport: NodeTransport, node: str, deadline: float) -> NodeObservation:
        found = self._reads.get(node)
        if found is None:
            self.reads += 1
            found = self._reads[node] = asyncio.ensure_future(transport.observe(node, deadline=deadline))
        return await asyncio.shield(found)


class _Memoized:
    def __init__(self, memo: NodeReadMemo, inner: NodeTransport) -> None:
        self.memo = memo
        self.inner = inner
        self.name = inner.name

    async def observe(self, node: str, *, deadline: float) -> NodeObservation:
        return await self.memo.observe(self.inner, node, deadline)
