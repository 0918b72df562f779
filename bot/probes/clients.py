"""The Kubernetes clients of each configured cluster: created on first use, shared, closed once.

One ``KubeClients`` per process. The diagnosis service reads through it (the watch-fed cache when
enabled) and execs through it; the remediation service borrows a cluster's API reader and its
connection from it for each action (``bot.remediation.ClusterClients``); ``gpubot act`` uses one
without loading any runbook. Only ``close`` closes what it holds.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubernetes.client import ApiClient

from bot.identity import Identity
from bot.kube.gpu import is_gpu_component, marks_gpu
from bot.probes.exec import PodExec
from bot.probes.kube import KubeReader, KubeReads
from bot.probes.kube_client import new_api_client
from bot.probes.views import Kept
from bot.settings import Settings

if TYPE_CHECKING:  # the watch-fed cache is imported only by a process that keeps one (serve)
    from bot.probes.cache import WatchCache

#: what the watch-fed cache keeps for the diagnoses' views: the nodes whose own object marks them
#: GPU machines, and the GPU-stack DaemonSets' pods whole (every question reads their containers)
GPU_KEPT = Kept(node_mark=marks_gpu, whole_pods_of=is_gpu_component)

#: impersonating clients kept per process (one per cluster and identity, least recently used out)
MAX_IDENTITY_CLIENTS = 64


@dataclass
class Clients:
    """One cluster's clients."""

    #: the connection ``reader`` uses; lent to the actions for their writes
    api: ApiClient
    #: what diagnoses read through: the cache when there is one, else ``reader``
    reads: KubeReads
    #: reads straight from the API server
    reader: KubeReader
    #: exec into containers; None under impersonation (the exec stream cannot carry the headers)
    exec: PodExec | None
    cache: WatchCache | None = None


class KubeClients:
    """Per-cluster clients for ``settings``; a watch-fed cache per cluster when ``use_cache``."""

    def __init__(self, settings: Settings, *, use_cache: bool = False, prefetch_nodes: bool = False) -> None:
        self.settings = settings
        self.use_cache = use_cache
        #: each cluster's reader asks for every node as it is built (``KubeReader.start_node_prefetch``):
        #: the one-shot CLI's diagnoses, which all read every node, and never with the cache
        self.prefetch_nodes = prefetch_nodes and not use_cache
        self._clients: dict[str, Clients] = {}
        self._as: OrderedDict[tuple[str, Identity], Clients] = OrderedDict()
        self._lock = threading.RLock()

    def cached(self, cluster_name: str, *, identity: Identity | None = None) -> Clients | None:
        """The clients ``for_cluster`` would return, if they are built already (else None)."""
        cluster = self.settings.cluster(cluster_name or None)
        # no lock: called on the event loop, which must not wait for a client being built
        if identity is not None:
            return self._as.get((cluster.name, identity))
        return self._clients.get(cluster.name)

    def for_cluster(self, cluster_name: str, *, identity: Identity | None = None) -> Clients:
        """The clients of a configured cluster (``""``: the default one), created on first use;
        safe to call from several threads (the service builds clients off the event loop)."""
        with self._lock:
            return self._for_cluster(cluster_name, identity=identity)

    def _for_cluster(self, cluster_name: str, *, identity: Identity | None = None) -> Clients:
        """The clients of a configured cluster (``""``: the default one), created on first use.

        With ``identity`` (per-user authority) every read impersonates that user: such clients
        never read through the shared cache (it holds what the bot may read, not what the user
        may) and cannot exec (the exec stream drops the impersonation headers).
        """
        cluster = self.settings.cluster(cluster_name or None)
        if identity is not None:
            key = (cluster.name, identity)
            found = self._as.get(key)
            if found is None:
                api = new_api_client(cluster, identity=identity)
                reader = KubeReader(api, page_size=self.settings.page_size, timeout=self.settings.api_timeout_s)
                found = self._as[key] = Clients(api=api, reads=reader, reader=reader, exec=None)
                while len(self._as) > MAX_IDENTITY_CLIENTS:
                    _, old = self._as.popitem(last=False)
                    old.reader.close()
            self._as.move_to_end(key)
            return found
        clients = self._clients.get(cluster.name)
        if clients is None:
            api = new_api_client(cluster)
            reader = KubeReader(api, page_size=self.settings.page_size, timeout=self.settings.api_timeout_s)
            clients = Clients(api=api, reads=reader, reader=reader, exec=PodExec(new_api_client(cluster)))
            if self.prefetch_nodes:  # before the clients can be seen (``cached`` takes no lock)
                reader.start_node_prefetch()
            if self.use_cache:
                from bot.probes.cache import WatchCache

                cache = WatchCache(
                    new_api_client(cluster),
                    reader,
                    kept=GPU_KEPT,
                    staleness_s=self.settings.cache_staleness_s,
                    page_size=self.settings.page_size,
                )
                cache.start()  # reads fall back to the API reader until it has synced
                clients.reads, clients.cache = cache, cache
            self._clients[cluster.name] = clients
        return clients

    def reads_for(self, cluster_name: str) -> KubeReader:
        """The API reader of a cluster, never the cache (a remediation's precondition re-probes
        through it; benchmarks read its request counters)."""
        return self.for_cluster(cluster_name).reader

    def api_client_for(self, cluster_name: str) -> ApiClient:
        """The API connection of a cluster, lent to the actions for their writes."""
        return self.for_cluster(cluster_name).api

    def cache_for(self, cluster_name: str) -> WatchCache | None:
        """The watch-fed cache of a cluster, when there is one (benchmarks wait on it)."""
        return self.for_cluster(cluster_name).cache

    async def close(self) -> None:
        for clients in self._clients.values():
            if clients.cache is not None:
                await asyncio.to_thread(clients.cache.close)
            clients.reader.close()
        for clients in self._as.values():
            clients.reader.close()
        self._clients.clear()
        self._as.clear()
