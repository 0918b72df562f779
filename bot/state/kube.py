"""gpubot's state on the Kubernetes API: the connection, the API server's clock, and errors.

Several replicas share nothing but the API server, so it is also their clock: every decision
about time (an offer's expiry, a stale heartbeat, a key's TTL) is taken against the ``Date``
header of a response the server just sent, never against this replica's clock, which may be
minutes off. ``KubeState.call`` makes one request through the official client, remembers the
server's time from its ``Date`` header and turns a failure into ``Conflict`` (409: someone else
wrote first), ``bot.errors.NotFoundError`` (404) or a one-line ``StateStoreError``.

The objects live in one namespace (``settings.namespace``) as the custom resources of
``deploy/helm/gpubot/crds/``; names are derived from ids so a lookup is one GET. This module
holds no record logic (``kube_actions``, ``kube_audit``, ``kube_keys``, ``kube_watch``, ``kube_locks``,
``leadership`` do) and never logs a body. Times in the objects' own fields are ``bot.state.timestamps``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from kubernetes.client import ApiClient, CoordinationV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from bot.errors import NotFoundError, StateStoreError
from bot.kube.objects import meta_of
from bot.state.timestamps import parse_ts

GROUP = "gpubot.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
REMEDIATIONS = "gpuremediations"
AUDIT_RECORDS = "gpuauditrecords"
KEYS = "gpukeys"
WATCH_RECORDS = "gpuwatchrecords"
#: every kind of gpubot's state. How the code uses them, which the custom-object calls cannot
#: show (their URL names no plural): the audit trail is append-only (never updated or deleted),
#: and only pending actions are claimed through a status subresource
PLURALS = (REMEDIATIONS, AUDIT_RECORDS, KEYS, WATCH_RECORDS)
APPEND_ONLY = frozenset({AUDIT_RECORDS})
WITH_STATUS = frozenset({REMEDIATIONS})


class Conflict(Exception):
    """409: the object changed since it was read (or already exists); someone else won."""


def object_name(action_id: str) -> str:
    """A DNS-1123 name for an action id (base64url → hex, reversible: ``action_id_of``)."""
    try:
        raw = base64.urlsafe_b64decode(action_id + "=" * (-len(action_id) % 4))
    except (binascii.Error, ValueError):
        raw = action_id.encode()
    return "a-" + raw.hex()


def action_id_of(name: str) -> str:
    return base64.urlsafe_b64encode(bytes.fromhex(name.removeprefix("a-"))).decode().rstrip("=")


def hashed_name(prefix: str, key: str, length: int = 40) -> str:
    """A short DNS-1123 name for any text (a node's lock key, a Slack request key)."""
    return f"{prefix}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:length]}"


class ServerClock:
    """The API server's time, from the ``Date`` header of its latest response.

    ``Date`` has one-second resolution, like the server's ``creationTimestamp``, so the reading
    is whole seconds too: between responses it advances by whole seconds of this host's
    monotonic clock (a rate, never a wall time). No replica's wall clock enters it; decisions
    read the server first, so their reading is that response's ``Date``.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._seen: tuple[datetime, float] | None = None

    def observe(self, headers: Mapping[str, str] | None) -> None:
        text = (headers or {}).get("Date") or (headers or {}).get("date")
        if not text:
            return
        try:
            when = parsedate_to_datetime(text).astimezone(UTC)
        except (TypeError, ValueError):
            return
        with self._lock:
            self._seen = (when, self._monotonic())

    def reading(self) -> datetime | None:
        with self._lock:
            if self._seen is None:
                return None
            when, at = self._seen
        return when + timedelta(seconds=int(max(0.0, self._monotonic() - at)))


class KubeState:
    """One namespace of gpubot state objects on one API server, shared by all the state modules."""

    def __init__(self, api_client: ApiClient, namespace: str, *, timeout_s: float = 10.0) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.timeout_s = timeout_s
        self.custom = CustomObjectsApi(api_client)
        self.coordination = CoordinationV1Api(api_client)
        self.clock = ServerClock()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` (a ``*_with_http_info`` method) once; its data, the server's time remembered."""
        try:
            data, _status, headers = fn(*args, _request_timeout=self.timeout_s, **kwargs)
        except ApiException as exc:
            self.clock.observe(exc.headers)
            if exc.status == 409:
                raise Conflict() from None
            if exc.status == 404:
                raise NotFoundError("no such state object in the Kubernetes API") from None
            raise StateStoreError(
                f"the Kubernetes API refused a state request ({exc.status} {exc.reason or ''})".strip()
            ) from None
        except (HTTPError, OSError) as exc:
            raise StateStoreError(f"the Kubernetes API cannot be reached ({type(exc).__name__})") from None
        self.clock.observe(headers)
        return data

    def now(self) -> datetime:
        """The server's time now: a fresh response's ``Date`` (one cheap list call)."""
        self.call(
            self.custom.list_namespaced_custom_object_with_http_info,
            GROUP,
            VERSION,
            self.namespace,
            KEYS,
            limit=1,
        )
        reading = self.clock.reading()
        if reading is None:
            raise StateStoreError("the Kubernetes API sent no Date header; its clock is unknown")
        return reading

    def server_time(self) -> datetime:
        """The server's time as of the latest response (call right after a read that decides)."""
        reading = self.clock.reading()
        return reading if reading is not None else self.now()

    # -- custom objects --------------------------------------------------------------------------
    def get(self, plural: str, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.call(
            self.custom.get_namespaced_custom_object_with_http_info, GROUP, VERSION, self.namespace, plural, name
        )
        return obj

    def create(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = self.call(
            self.custom.create_namespaced_custom_object_with_http_info, GROUP, VERSION, self.namespace, plural, body
        )
        return obj

    def replace(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT with ``metadata.resourceVersion``: ``Conflict`` if the object changed since."""
        return self._put(self.custom.replace_namespaced_custom_object_with_http_info, plural, body)

    def replace_status(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT of the status subresource with ``metadata.resourceVersion`` (compare-and-swap)."""
        return self._put(self.custom.replace_namespaced_custom_object_status_with_http_info, plural, body)

    def _put(self, fn: Callable[..., Any], plural: str, body: dict[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = self.call(fn, GROUP, VERSION, self.namespace, plural, body["metadata"]["name"], body)
        return obj

    def delete(self, plural: str, name: str, resource_version: str | None = None) -> None:
        """Delete ``name`` (only at ``resource_version`` when given); gone already is fine."""
        body = {"preconditions": {"resourceVersion": resource_version}} if resource_version else None
        with contextlib.suppress(NotFoundError):
            self.call(
                self.custom.delete_namespaced_custom_object_with_http_info,
                GROUP,
                VERSION,
                self.namespace,
                plural,
                name,
                body=body,
            )

    def list_all(self, plural: str, *, label_selector: str = "", page: int = 500) -> list[dict[str, Any]]:
        """Every object of ``plural`` in the namespace, page by page (never one unbounded list)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            kwargs: dict[str, Any] = {"limit": page}
            if token:
                kwargs["_continue"] = token
            if label_selector:
                kwargs["label_selector"] = label_selector
            data = self.call(
                self.custom.list_namespaced_custom_object_with_http_info,
                GROUP,
                VERSION,
                self.namespace,
                plural,
                **kwargs,
            )
            items.extend(data.get("items") or [])
            token = meta_of(data).get("continue") or ""
            if not token:
                return items


def created_at(obj: Mapping[str, Any]) -> datetime:
    return parse_ts(str(obj["metadata"]["creationTimestamp"]))
