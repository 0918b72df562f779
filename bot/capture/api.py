"""The API reads of a capture: the bot's read facade plus the cluster-wide lists a capture needs.

Only ``list_*``/``get`` calls of the official client, paginated like every other read. Secrets
and ConfigMaps are never listed: a capture cannot leak what it never read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from kubernetes import client

from bot.capture.select import ClusterObjects
from bot.errors import ApiRead, KubeApiError, NotFoundError
from bot.probes.kube import KubeReader

Obj = dict[str, Any]


class CaptureReader(KubeReader):
    """``KubeReader`` with the cluster-wide lists of workloads, quotas and events."""

    async def list_replicasets_all(self) -> list[Obj]:
        read = ApiRead("list", "replicasets", group="apps")
        return await self._list(read, self._apps.list_replica_set_for_all_namespaces)

    async def list_statefulsets_all(self) -> list[Obj]:
        read = ApiRead("list", "statefulsets", group="apps")
        return await self._list(read, self._apps.list_stateful_set_for_all_namespaces)

    async def list_jobs_all(self) -> list[Obj]:
        return await self._list(ApiRead("list", "jobs", group="batch"), self._batch.list_job_for_all_namespaces)

    async def list_resourcequotas_all(self) -> list[Obj]:
        return await self._list(ApiRead("list", "resourcequotas"), self._core.list_resource_quota_for_all_namespaces)

    async def server_version(self) -> str:
        """``/version``'s gitVersion (``v1.28.3``), or "" when the server will not say."""
        try:
            body = await self._call(ApiRead("get", "version"), client.VersionApi(self._client).get_code)
        except KubeApiError:
            return ""
        return str(body.get("gitVersion") or "")

    async def read_cluster(self) -> ClusterObjects:
        """Everything ``bot.capture.select`` chooses from, read concurrently.

        Nodes and pods are the capture: failing to list them fails it. A kind the reader may not
        list (403) or the server does not serve (404) is left out with a note instead.
        """
        notes: list[str] = []

        async def optional(what: str, reads: Awaitable[list[Obj]]) -> list[Obj]:
            try:
                return await reads
            except KubeApiError as exc:
                if exc.status not in (403, 404) and not isinstance(exc, NotFoundError):
                    raise
                notes.append(f"{what} not captured: {exc.user_message}")
                return []

        nodes, pods, *rest = await asyncio.gather(
            self.list_nodes(),
            self.list_pods(),
            optional("namespaces", self.list_namespaces()),
            optional("daemonsets", self.list_daemonsets()),
            optional("deployments", self.list_deployments()),
            optional("replicasets", self.list_replicasets_all()),
            optional("statefulsets", self.list_statefulsets_all()),
            optional("jobs", self.list_jobs_all()),
            optional("resourcequotas", self.list_resourcequotas_all()),
            optional("events", self.list_events("")),
        )
        namespaces, daemonsets, deployments, replicasets, statefulsets, jobs, quotas, events = rest
        return ClusterObjects(
            nodes=nodes,
            namespaces=namespaces,
            pods=pods,
            workloads=[*daemonsets, *deployments, *replicasets, *statefulsets, *jobs],
            quotas=quotas,
            events=events,
            notes=notes,
        )
