"""What the confirm flow asks of the per-node lock that every actor sees (the cluster's Lease).

A node action first takes its node's lock on the *cluster* (``kube_node_lock.ClusterNodeGuard``:
a coordination.k8s.io Lease per node in the configured namespace), whatever the state backend, so
two terminals with different state files, or a terminal beside the bot, cannot act on one node at
once. The lock carries a duration and is renewed while the run lasts; it also carries the run's
record and, before every step, what the run has changed so far. So whoever touches the node next
after its holder died (``abandoned``) can restore the node from the lock alone, even if the dead
run's state file is on another machine.

This module holds only the contract: no client, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.remediation.store import PendingAction

NodeClaimStatus = Literal["acquired", "busy", "abandoned"]
#: how a stale record's node lock stands: "ours" (the lock is now the caller's: restore from the
#: record), "elsewhere" (another process already restored the node, or acts on it now: do not
#: touch it), "live" (its holder still renews the lock: leave it alone)
Adoption = Literal["ours", "elsewhere", "live"]


@dataclass(frozen=True)
class NodeClaim:
    """The answer of ``NodeGuard.acquire``.

    ``acquired``: the caller holds the node. ``busy``: ``holder`` (a live run) does; its lock runs
    out in ``expires_in_s`` unless renewed. ``abandoned``: ``holder`` stopped renewing; the caller
    now holds the lock *for restoring it* (``holder.progress`` says what it changed) and must
    ``release(..., restored=holder.id)`` before it acquires the node for its own run.
    """

    status: NodeClaimStatus
    holder: PendingAction | None = None
    expires_in_s: float = 0.0


class NodeGuard(Protocol):
    """The per-node lock on the cluster; blocking calls (the flow runs them in a thread).

    ``holder`` is one run's identity (unique per attempt, so two clicks in one process never
    share it). Every method may raise ``StateStoreError``: no lock, no action.
    """

    def acquire(self, record: PendingAction, holder: str) -> NodeClaim: ...

    def renewed(self, record: PendingAction) -> bool:
        """Whether ``record``'s node lock names it and is still renewed (its process lives)."""
        ...

    def adopt(self, record: PendingAction, holder: str) -> Adoption:
        """For a record recovery took over from the store: may its node be restored from it?"""
        ...

    def renew(self, record: PendingAction, holder: str, progress: Mapping[str, Any] | None = None) -> None:
        """Renew the lock (and store ``progress`` on it); ``StateStoreError`` when it is not ours any more."""
        ...

    def release(self, record: PendingAction, holder: str, *, restored: str = "") -> None:
        """Free the node (never raises); ``restored``: the id of an abandoned run just restored."""
        ...

    def abandoned(self) -> list[PendingAction]:
        """Runs whose holder stopped renewing their node's lock, on every cluster, whatever state
        recorded them: what a sweep restores without waiting for someone to touch the node."""
        ...
