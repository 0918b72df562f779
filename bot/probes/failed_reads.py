"""A reader for a cluster whose client could not be built in time: every read fails the same way.

When the client of a cluster is not ready by the command's deadline (a kubeconfig credential
plugin that never returns), the diagnosis still runs, over this reader: each loader fails with
the one error, so the report says in the usual way what it could not read, and concludes nothing.
"""

from __future__ import annotations

from typing import Any

from bot.errors import KubeApiError
from bot.probes.slim import SlimPod
from bot.probes.views import DerivedViews

Obj = dict[str, Any]


class FailedReads(DerivedViews):
    """``KubeReads`` whose every call raises a copy of ``error`` (the derived views too: they read)."""

    def __init__(self, error: KubeApiError) -> None:
        self.error = error

    def _fail(self) -> KubeApiError:
        e = self.error
        return KubeApiError(e.user_message, status=e.status, kind=e.kind, read=e.read, server=e.server,
                            detail=e.detail)

    async def get_object(self, kind: str, name: str, namespace: str = "") -> Obj:
        raise self._fail()

    async def list_pods(self, namespace: str = "", *, label_selector: str = "", field_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def slim_pods(
        self, *, field_selector: str = "", nodes: set[str] | None = None, all_nodes: int = 0
    ) -> list[SlimPod]:
        raise self._fail()

    async def list_namespaces(self) -> list[Obj]:
        raise self._fail()

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def list_deployments(self, *, label_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def list_replicasets(self, namespace: str, *, label_selector: str = "") -> list[Obj]:
        raise self._fail()

    async def list_resourcequotas(self, namespace: str) -> list[Obj]:
        raise self._fail()

    async def list_custom(
        self, group: str, version: str, plural: str, namespace: str = "", *, label_selector: str = ""
    ) -> list[Obj]:
        raise self._fail()

    async def get_custom(self, group: str, version: str, plural: str, name: str, namespace: str = "") -> Obj:
        raise self._fail()

    async def served(self, group: str, version: str) -> bool:
        raise self._fail()
