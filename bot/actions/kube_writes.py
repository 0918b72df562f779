"""The only Kubernetes writes gpubot makes, through the official client.

Four calls, each the gentlest form of its change: a graceful pod delete (30 s, never 0, never a
force delete: force deletes are what leave devices allocated to pods that no longer exist,
kubernetes#130145), a strategic-merge patch of a node's ``spec.unschedulable`` (cordon/uncordon),
a merge of namespace labels, and the ``kubectl.kubernetes.io/restartedAt`` template annotation
that ``kubectl rollout restart`` sets on a DaemonSet. The synchronous client runs in a thread.
``ApiException`` is translated here into ``ActionError`` with a one-line message.

This module must never be imported outside ``bot.actions``, never call any other write method,
and never pass ``grace_period_seconds=0`` or ``propagation_policy`` that orphans objects.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.errors import ActionError

#: seconds a deleted pod gets to stop; the Kubernetes default, and never zero
GRACE_PERIOD_S = 30
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
#: shows in managedFields who changed the object
FIELD_MANAGER = "gpubot"
_T = TypeVar("_T")


def _message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
        text = str(body.get("message") or "")
    except (ValueError, AttributeError):
        text = ""
    return f"API error {exc.status} {exc.reason or ''}".strip() + (f": {text[:200]}" if text else "")


class KubeWriter:
    """Writes for one cluster; every method is a coroutine and raises only ``ActionError``.

    It borrows ``api_client`` (its owner closes it).
    """

    def __init__(self, api_client: client.ApiClient, *, timeout: float = 10.0) -> None:
        self._client = api_client
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self.timeout = timeout

    async def _call(self, what: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        kwargs["_request_timeout"] = self.timeout

        def do() -> _T:
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                raise ActionError(f"{what}: {_message(exc)}") from None
            except Exception as exc:  # noqa: BLE001 - translated at this boundary
                raise ActionError(f"{what}: API unreachable ({type(exc).__name__})") from None

        return await asyncio.to_thread(do)

    async def delete_pod(self, namespace: str, name: str, *, uid: str = "") -> str:
        """Graceful delete; with ``uid`` only the very pod the precondition saw (409 otherwise)."""
        options = client.V1DeleteOptions(
            grace_period_seconds=GRACE_PERIOD_S,
            preconditions=client.V1Preconditions(uid=uid) if uid else None,
        )
        await self._call(
            f"delete pod {namespace}/{name}",
            self._core.delete_namespaced_pod,
            name,
            namespace,
            grace_period_seconds=GRACE_PERIOD_S,
            body=options,
        )
        return f"graceful delete, {GRACE_PERIOD_S}s grace period"

    async def set_unschedulable(self, node: str, unschedulable: bool) -> str:
        """Cordon (True) or uncordon (False), exactly as ``kubectl cordon`` patches it."""
        await self._call(
            f"{'cordon' if unschedulable else 'uncordon'} node {node}",
            self._core.patch_node,
            node,
            {"spec": {"unschedulable": unschedulable}},
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
        )
        return f"spec.unschedulable={str(unschedulable).lower()}"

    async def patch_namespace_labels(self, namespace: str, labels: Mapping[str, str]) -> str:
        """Add or set labels; labels not named are left as they are."""
        await self._call(
            f"label namespace {namespace}",
            self._core.patch_namespace,
            namespace,
            {"metadata": {"labels": dict(labels)}},
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
        )
        return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))

    async def restart_daemonset(self, namespace: str, name: str, at: str) -> str:
        """``kubectl rollout restart``: a new template annotation makes the controller roll pods."""
        body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}}
        await self._call(
            f"rollout-restart daemonset {namespace}/{name}",
            self._apps.patch_namespaced_daemon_set,
            name,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
        )
        return f"{RESTARTED_AT}={at}"
