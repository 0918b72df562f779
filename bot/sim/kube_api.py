"""The simulated Kubernetes API server: real HTTP that kubectl and the official client accept.

It routes ``/api`` and ``/apis`` URLs to the store (``kube_rest``), watch streams
(``kube_watch``), exec (``exec_ws``) and discovery (``kube_discovery``); on the way it counts
requests and bytes, applies injected faults and records every write, so a test can prove that a
probe never wrote. Requests that impersonate a user (``Impersonate-User``/``-Group``) are
checked against the scenario's RBAC table (``bot.sim.rbac``) and recorded. Any bearer token is
accepted and there is no TLS: it must only ever listen on a loopback address in tests, demos and
benchmarks, never stand in for a real cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import format_datetime
from typing import Any

from aiohttp import web

from bot.sim import kube_discovery as discovery
from bot.sim import kube_rest as rest
from bot.sim.exec_ws import ExecLogEntry, NodeRead, NodeWrite, handle_exec
from bot.sim.faults import FaultSet
from bot.sim.kube_status import status_response
from bot.sim.kube_watch import WatchHub, serve_watch
from bot.sim.node_lifecycle import NodeLifecycle, leases_for
from bot.sim.rbac import BOT_USER, RbacTable, forbidden_message
from bot.sim.scenario import Scenario
from bot.sim.store import RESOURCE_TYPES, ObjectStore, ResourceType, ServerClock, system_clock

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
_TYPES: dict[tuple[str, str], ResourceType] = {(rt.api_version, rt.plural): rt for rt in RESOURCE_TYPES}


@dataclass
class WriteRecord:
    """One write request as it arrived, and how it ended."""

    verb: str  # HTTP method: POST, PUT, PATCH, DELETE
    path: str
    body: Any  # parsed JSON, or None
    time: float
    query: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    status: int = 0
    grace_period_seconds: int | None = None


@dataclass
class RequestStats:
    """Request and byte counts, so benchmarks can show how much a command read."""

    requests: int = 0
    bytes_sent: int = 0
    per_path: Counter[str] = field(default_factory=Counter)

    def reset(self) -> None:
        self.requests = 0
        self.bytes_sent = 0
        self.per_path.clear()


def _not_found_path() -> web.Response:
    return status_response(404, "the server could not find the requested resource")


class KubeApiServer:
    """An aiohttp Kubernetes API over one scenario; ``url`` is set by ``start``."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        extra_objects: list[Any] | None = None,
        clock: ServerClock = system_clock,
    ) -> None:
        self.scenario = scenario
        self.host = host
        self.port = port
        self.url = ""
        # every node's kubelet holds a Lease in kube-node-lease, as on a real cluster
        self.store = ObjectStore(
            [*scenario.objects, *leases_for(scenario.objects), *(extra_objects or [])], clock=clock
        )
        #: answers a node read command for exec into an agent pod (SimCluster wires its SSH fleet)
        self.node_read: NodeRead | None = None
        #: runs a write for exec into an actuator pod (SimCluster wires its SSH fleet)
        self.node_write: NodeWrite | None = None
        #: the kubelets' heartbeats and the node controller (the SSH simulator reports kubelet starts/stops)
        self.lifecycle = NodeLifecycle(self.store)
        self.faults = FaultSet(scenario.api_faults)
        self.writes: list[WriteRecord] = []
        self.stats = RequestStats()
        #: (namespace, pod, container, argv, exit code) for every exec
        self.exec_log: list[ExecLogEntry] = []
        #: (namespace, pod) of every exec request in the order they arrived, those that hang or
        #: fail included (``exec_log`` has only those that ran)
        self.exec_arrivals: list[tuple[str, str]] = []
        #: (user, groups, verb, resource) of every request that impersonated someone
        self.impersonated: list[tuple[str, tuple[str, ...], str, str]] = []
        self._hub = WatchHub()
        self._runner: web.AppRunner | None = None
        #: set when the server stops, so requests held by a ``hang`` fault end with it
        self._stopping = asyncio.Event()

    @property
    def active_watches(self) -> int:
        """Open watch streams (tests wait for a watch to be connected before writing)."""
        return len(self._hub.queues)

    # -- lifecycle -------------------------------------------------------------------------
    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def start(self) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        # aiohttp has no public getter for the bound port; the runner lists bound addresses
        self.port = int(self._runner.addresses[0][1])
        self.url = f"http://{self.host}:{self.port}"

    async def stop(self) -> None:
        self._stopping.set()
        self.lifecycle.close()
        self._hub.close_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- middleware: stats, faults ------------------------------------------------------------
    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.stats.requests += 1
        self.stats.per_path[request.path] += 1
        fault = self.faults.match(request.method, request.path_qs)
        if fault is not None:
            if fault.hang:  # accepted, never answered: the client's own timeout has to end it
                await self._stopping.wait()
                return self._count(status_response(503, "the simulator stopped"))
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault.status:
                return self._count(status_response(fault.status, f"injected fault ({fault.status})"))
        return self._count(await handler(request))

    def _count(self, response: web.StreamResponse) -> web.StreamResponse:
        if not response.prepared:
            # the server's own clock, which clients (gpubot's Kubernetes store) judge expiry by
            response.headers["Date"] = format_datetime(self.store.clock(), usegmt=True)
        if isinstance(response, web.Response) and isinstance(response.body, bytes | bytearray):
            self.stats.bytes_sent += len(response.body)
        return response

    def _add_bytes(self, n: int) -> None:
        self.stats.bytes_sent += n

    # -- routing ----------------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        simple = self._non_resource(parts)
        if simple is not None:
            return simple
        if parts[:2] == ["api", "v1"]:
            group_version, rest_parts = "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group_version, rest_parts = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            return _not_found_path()
        watch = request.query.get("watch", "").lower() in ("true", "1")
        if rest_parts[:1] == ["watch"]:
            watch, rest_parts = True, rest_parts[1:]
        if group_version == "authorization.k8s.io/v1" and rest_parts == ["selfsubjectaccessreviews"]:
            if request.method != "POST":
                return status_response(405, "the server does not allow this method on selfsubjectaccessreviews")
            return await self._access_review(request)
        target = self._target(group_version, rest_parts)
        if target is None:
            return _not_found_path()
        denied = self._authorize(request, target, watch)
        if denied is not None:
            return denied
        raw = await request.read() if request.method in _WRITE_METHODS else b""
        record = None
        if request.method in _WRITE_METHODS and target.sub != "exec":
            record = WriteRecord(
                verb=request.method,
                path=request.path,
                body=None,
                time=time.time(),
                query=dict(request.query),
                content_type=request.content_type,
            )
            self.writes.append(record)
        try:
            body = rest.parse_body(raw) if raw else None
            if record is not None:
                record.body = body
                if request.method == "DELETE":
                    record.grace_period_seconds = rest.grace_period(request, body)
            response = await self._serve(request, target, watch, body)
        except rest.RestError as exc:
            response = exc.response
        if record is not None:
            record.status = response.status
        return response

    def _authorize(self, request: web.Request, target: rest.Target, watch: bool) -> web.Response | None:
        """A request impersonating a user is checked against the scenario's ``rbac:`` table, the
        bot's own against ``rbac_bot:`` when the scenario has one (403 as a real API server words it)."""
        verb = _VERBS.get(request.method, request.method.lower())
        if request.method == "GET":
            verb = "watch" if watch else ("list" if target.name is None else "get")
        if target.sub == "exec":
            verb = "create"  # API servers from 1.31 authorize the WebSocket exec upgrade as create
        resource = target.rtype.plural + (f"/{target.sub}" if target.sub else "")
        user, groups, rbac = self._subject(request)
        if user != BOT_USER:
            self.impersonated.append((user, groups, verb, resource))
        if rbac is None or rbac.allows(user, groups, verb, resource, target.namespace):
            return None
        return status_response(403, forbidden_message(user, verb, resource, target.namespace))

    def _subject(self, request: web.Request) -> tuple[str, tuple[str, ...], RbacTable | None]:
        """Who asks (the impersonated user, or the bot) and the table their requests are checked by."""
        user = request.headers.get(IMPERSONATE_USER)
        if user is None:
            return BOT_USER, (), self.scenario.rbac_bot
        return user, tuple(request.headers.getall(IMPERSONATE_GROUP, ())), self.scenario.rbac

    async def _access_review(self, request: web.Request) -> web.Response:
        """``POST .../selfsubjectaccessreviews``: whether the asker may do what the review names,
        from the same tables that decide its real requests (every authenticated user may ask)."""
        try:
            body = rest.parse_body(await request.read())
        except rest.RestError as exc:
            return exc.response
        attrs = ((body or {}).get("spec") or {}).get("resourceAttributes") if isinstance(body, dict) else None
        if not isinstance(attrs, dict) or not attrs.get("verb") or not attrs.get("resource"):
            return status_response(400, "spec.resourceAttributes with verb and resource is required")
        resource = str(attrs["resource"]) + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
        namespace = str(attrs.get("namespace") or "") or None
        user, groups, rbac = self._subject(request)
        allowed = rbac is None or rbac.allows(user, groups, str(attrs["verb"]), resource, namespace)
        status: dict[str, Any] = {"allowed": allowed}
        if not allowed:
            status["reason"] = f"no RBAC rule of the scenario lets {user} {attrs['verb']} {resource}"
        answer = {**body, "status": status}
        answer.setdefault("metadata", {})["creationTimestamp"] = None
        return rest.json_response(answer, status=201)

    def _non_resource(self, parts: list[str]) -> web.StreamResponse | None:
        """Discovery and health endpoints; None for resource URLs."""
        if not parts:
            return rest.json_response({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz"]})
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts == ["version"]:
            return rest.json_response(discovery.version_info(self.scenario.version))
        if parts == ["api"]:
            return rest.json_response(discovery.api_versions(f"{self.host}:{self.port}"))
        if parts == ["apis"]:
            return rest.json_response(discovery.api_group_list())
        doc: dict[str, Any] | None = None
        if parts == ["api", "v1"]:
            doc = discovery.resource_list("v1")
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(f"{parts[1]}/{parts[2]}")
        elif parts[0] not in ("api", "apis"):
            return _not_found_path()  # /openapi/v2, /openapi/v3 and the rest: not served
        else:
            return None
        return rest.json_response(doc) if doc is not None else _not_found_path()

    def _target(self, group_version: str, parts: list[str]) -> rest.Target | None:
        if not parts or len(parts) > 5:
            return None
        if parts[0] == "namespaces" and len(parts) >= 3 and (group_version, parts[2]) in _TYPES:
            rtype = _TYPES[(group_version, parts[2])]
            if not rtype.namespaced:
                return None
            name = parts[3] if len(parts) > 3 else None
            sub = parts[4] if len(parts) > 4 else None
            return self._checked(rest.Target(rtype, parts[1], name, sub))
        found = _TYPES.get((group_version, parts[0]))
        if found is None or len(parts) > 3:
            return None
        rtype = found
        name = parts[1] if len(parts) > 1 else None
        sub = parts[2] if len(parts) > 2 else None
        if rtype.namespaced and name is not None:
            return None
        return self._checked(rest.Target(rtype, None, name, sub))

    @staticmethod
    def _checked(target: rest.Target) -> rest.Target | None:
        if target.sub is not None and target.sub not in target.rtype.subresources:
            return None
        return target

    async def _serve(self, request: web.Request, target: rest.Target, watch: bool, body: Any) -> web.StreamResponse:
        method, store = request.method, self.store
        if target.name is None:
            if method == "GET" and watch:
                return await self._watch(request, target)
            if method == "GET":
                return rest.list_objects(request, store, target)
            if method == "POST" and (target.namespace is not None or not target.rtype.namespaced):
                return rest.create_object(request, store, target, body)
            return status_response(405, f"the server does not allow this method on {target.rtype.plural}")
        if target.sub == "exec":
            self.exec_arrivals.append((target.namespace or "", target.name))
            pod = rest.existing(store, target)
            return await handle_exec(
                request, self.scenario, pod, self.exec_log.append, self.node_read, self.node_write
            )
        if target.sub == "log":
            rest.existing(store, target)
            return web.Response(text="", content_type="text/plain")
        if method == "GET":
            return rest.get_object(request, store, target)
        if _VERBS.get(method) not in target.rtype.verbs:
            # e.g. the audit trail's records: served with get, list, watch and create only
            return status_response(405, "the server does not allow this method on the requested resource")
        if method == "PUT":
            return rest.replace_object(request, store, target, body)
        if method == "PATCH":
            return rest.patch_object(request, store, target, body)
        if method == "DELETE" and target.sub is None:
            return rest.delete_object(request, store, target, body)
        return status_response(405, f"the server does not allow this method on {target.rtype.plural}")

    async def _watch(self, request: web.Request, target: rest.Target) -> web.StreamResponse:
        match, _hints = rest.selectors(request, target.rtype)
        rv_text = request.query.get("resourceVersion", "")
        timeout_text = request.query.get("timeoutSeconds")
        try:
            rv = int(rv_text) if rv_text not in ("", "0") else None
            timeout_s = float(timeout_text) if timeout_text else None
        except ValueError:
            return status_response(400, f"invalid resourceVersion or timeoutSeconds: {rv_text!r}")
        return await serve_watch(
            request,
            store=self.store,
            hub=self._hub,
            rtype=target.rtype,
            namespace=target.namespace,
            match=match,
            rv=rv,
            timeout_s=timeout_s,
            count_bytes=self._add_bytes,
        )
