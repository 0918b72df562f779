"""``open_state(settings)``: the one place that reads ``settings.state`` and opens the stores.

``state: sqlite`` (one replica): every store on one SQLite file (``settings.state_path``,
``bot.state.sqlite``), this process always the leader. ``state: kubernetes`` (several replicas):
every store as objects on the Kubernetes API of the default cluster, in ``settings.namespace``
(``bot.state.kube_*``), leadership on a Lease (``bot.state.leadership``), and the housekeeping
that only the leader runs. Callers (``bot.wiring``, ``bot.oneshot``, ``gpubot audit``) get the
same ``Stores`` either way and never ask which.

The per-node action lock (``kube_locks.ClusterNodeGuard``) is not chosen here: it is always the
node's own cluster, whatever the state backend.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.settings import Settings
from bot.state.contracts import AlertGroups, AuditLog, Leader, PendingStore, ProblemStore, SeenRequests
from bot.state.kube import KubeState
from bot.state.kube_actions import KubePendingStore
from bot.state.kube_audit import KubeAuditLog
from bot.state.kube_keys import KubeKeys
from bot.state.kube_locks import ApiClients
from bot.state.kube_watch import KubeProblemStore
from bot.state.leadership import Leadership, LeaseLock, SoleLeader
from bot.state.records import process_owner
from bot.state.sqlite import Clock, SqliteDatabase
from bot.state.sqlite_actions import SqlitePendingStore
from bot.state.sqlite_audit import SqliteAuditLog
from bot.state.sqlite_requests import SqliteSeenRequests
from bot.state.sqlite_watch import SqliteAlertGroups, SqliteProblemStore


def _nothing() -> None:
    return None


@dataclass
class Stores:
    """Every store of one backend, opened together (one file, or one namespace and clock)."""

    #: the pending actions (offers, claims, runs)
    store: PendingStore
    #: the append-only audit trail
    audit: AuditLog
    #: Slack requests already handled by any replica
    seen: SeenRequests
    #: the watch's memory
    problems: ProblemStore
    #: the Alertmanager desk's memory
    alert_groups: AlertGroups
    #: who runs the singletons (sweeps, the watch, posting); SQLite: this process alone
    leader: Leader = field(default_factory=SoleLeader)
    #: housekeeping only the leader runs, with the offer sweep (expired keys, old watch records)
    sweeps: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    #: releases what was opened (the file's connections)
    close: Callable[[], None] = _nothing

    def actions(self) -> tuple[PendingStore, AuditLog]:
        """The pending actions and their audit trail, as the remediation service takes them."""
        return self.store, self.audit


def open_sqlite(path: str | Path, *, clock: Clock | None = None) -> Stores:
    """Every store on the SQLite file at ``path`` (migrated when older), on one clock."""
    db = SqliteDatabase(path)
    return Stores(
        store=SqlitePendingStore(db, clock=clock),
        audit=SqliteAuditLog(db, clock=clock),
        seen=SqliteSeenRequests(db, clock=clock),
        problems=SqliteProblemStore(db),
        alert_groups=SqliteAlertGroups(db),
        close=db.close,
    )


def open_kube(kube: KubeState, *, leader_lease_s: float = 15.0, identity: str = "") -> Stores:
    """Every store as objects in ``kube``'s namespace, leadership on its Lease (``identity``: this
    process's name as the Lease's holder)."""
    keys = KubeKeys(kube)
    problems = KubeProblemStore(kube)

    async def sweep_keys() -> None:
        await asyncio.to_thread(keys.sweep)
        await asyncio.to_thread(lambda: problems.sweep(kube.now()))

    return Stores(
        store=KubePendingStore(kube),
        audit=KubeAuditLog(kube),
        seen=keys,
        problems=problems,
        alert_groups=problems,
        leader=Leadership(LeaseLock(kube, identity or process_owner(), lease_s=leader_lease_s)),
        sweeps=[sweep_keys],
        close=keys.close,
    )


def state_on_cluster(settings: Settings) -> bool:
    """Whether the state lives on the cluster's API (``state: kubernetes``), so opening it needs
    the cluster's clients; the SQLite file needs none."""
    return settings.state == "kubernetes"


def open_state(settings: Settings, clients: ApiClients | None = None) -> Stores:
    """The stores ``settings.state`` names: the SQLite file (one replica) or the Kubernetes API of
    the default cluster, in ``settings.namespace`` (needs ``clients``).

    Without cluster clients (a stand-in diagnosis service) nothing can be shared on a cluster: the
    state file keeps the watch's memory, as with one replica.
    """
    if not state_on_cluster(settings) or clients is None:
        return open_sqlite(settings.state_path)
    cluster = settings.cluster(None).name
    kube = KubeState(clients.api_client_for(cluster), settings.namespace, timeout_s=settings.api_timeout_s)
    return open_kube(kube, leader_lease_s=settings.leader_lease_s)


def state_location(settings: Settings) -> str:
    """Where the pending actions and the audit trail live, in words, without opening anything."""
    if state_on_cluster(settings):
        return f"namespace {settings.namespace} of cluster {settings.cluster(None).name} (state: kubernetes)"
    return f"{os.path.abspath(settings.state_path)} (state: sqlite)"
