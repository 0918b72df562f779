"""The Kubernetes clients of each configured cluster: created on first use, shared, closed once.

One ``KubeClients`` per process. The diagnosis service reads through it (the watch-fed cache when
enabled) and execs through it; the remediation service borrows a cluster's API reader and its
connection from it for each action (``bot.remediation.ClusterClients``); ``gpubot act`` uses one
without loading any runbook. Only ``close`` closes what it holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kubernetes.client import ApiClient

from bot.probes.cache import WatchCache
from bot.probes.exec import PodExec
from bot.probes.kube import KubeReader, KubeReads
from bot.probes.kube_client import new_api_client
from bot.settings import Settings


@dataclass
class Clients:
    """One cluster's clients."""

    #: the connection ``reader`` uses; lent to the actions for their writes
    api: ApiClient
    #: what diagnoses read through: the cache when there is one, else ``reader``
    reads: KubeReads
    #: reads straight from the API server
    reader: KubeReader
    exec: PodExec
    cache: WatchCache | None = None


class KubeClients:
    """Per-cluster clients for ``settings``; a watch-fed cache per cluster when ``use_cache``."""

    def __init__(self, settings: Settings, *, use_cache: bool = False) -> None:
        self.settings = settings
        self.use_cache = use_cache
        self._clients: dict[str, Clients] = {}

    def for_cluster(self, cluster_name: str) -> Clients:
        """The clients of a configured cluster (``""``: the default one), created on first use."""
        cluster = self.settings.cluster(cluster_name or None)
        clients = self._clients.get(cluster.name)
        if clients is None:
            api = new_api_client(cluster)
            reader = KubeReader(api, page_size=self.settings.page_size, timeout=self.settings.api_timeout_s)
            clients = Clients(api=api, reads=reader, reader=reader, exec=PodExec(new_api_client(cluster)))
            if self.use_cache:
                cache = WatchCache(
                    new_api_client(cluster),
                    reader,
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
        self._clients.clear()
