"""The one facade for Kubernetes reads: get and paginated list, nothing else.

Every diagnosis reads the cluster through ``KubeReads``; the one-shot CLI uses ``KubeReader``
(paginated API lists), the long-running bot may put the watch-fed cache in front of it. This module
must never write: it calls only ``read_*``/``list_*`` methods of the official client.

Requests run in a thread pool; responses are read raw and parsed as JSON, so every object is
the plain dict the API served (camelCase keys), the same shape the simulator's scenario files
hold. Where the client's settings allow it, every GET goes over a kept connection
(``bot.probes.kept_gets``): the same request, path and query the official client's method builds,
without the generated client's and urllib3's per-request cost (~1.2 against ~0.55 ms of CPU: a
``pending -A`` at 5,000 nodes makes about a hundred beside its per-node lists). Elsewhere (a
proxy, a TLS server name, impersonation) the client's own method is called,
``_preload_content=False``. Either way the read is named by that method in ``ReadStats`` and its
RBAC is that method's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, urlencode

import orjson
from kubernetes import client

from bot.errors import ApiRead, KubeApiError, NotFoundError
from bot.kube.custom_resources import declared
from bot.kube.objects import Obj, meta_of
from bot.probes.deadline import DEADLINE, remaining
from bot.probes.kept_gets import KeptGets
from bot.probes.lazy_api import LazyApi
from bot.probes.list_pages import continue_ahead
from bot.probes.node_images import without_images
from bot.probes.read_errors import classify, safe_url
from bot.probes.slim import SlimPod, slim
from bot.probes.views import DerivedViews, FailedRead

#: page size of the slimmed cluster-wide pod walk: each page is dropped as soon as it is slimmed,
#: so larger pages only cost transient memory, and save round trips on big clusters
SLIM_PAGE_SIZE = 2000

#: up to this many nodes, and when they are at most half of the cluster's, pods on a node set
#: are read with one field-selected list per node (the API server answers ``spec.nodeName=`` from
#: an index, and only those pods are decoded); otherwise decoding every pod once in large pages
#: is cheaper than that many requests. A request costs us about as much CPU as decoding five
#: realistic pods (~1.2 ms against ~0.2 ms a pod), so per-node lists win until the nodes hold most
#: of the pods: at 200 nodes / 40 GPU nodes / 5,000 pods they read 2.8 MB in 51 requests (0.14 s
#: CPU) where the walk of every pod read 35 MB in 14 (1.25 s CPU); a share of a tenth sent that
#: cluster down the walk.
PER_NODE_SLIM_LIMIT = 1000
PER_NODE_SLIM_SHARE = 0.5
#: field-selected per-node lists in flight at once
PER_NODE_CONCURRENCY = 8

#: kinds whose objects ``get_object`` can read, with the API class and method stem
_READERS: dict[str, tuple[str, str, bool]] = {
    "Pod": ("CoreV1Api", "read_namespaced_pod", True),
    "Node": ("CoreV1Api", "read_node", False),
    "Namespace": ("CoreV1Api", "read_namespace", False),
    "ReplicaSet": ("AppsV1Api", "read_namespaced_replica_set", True),
    "Deployment": ("AppsV1Api", "read_namespaced_deployment", True),
    "StatefulSet": ("AppsV1Api", "read_namespaced_stateful_set", True),
    "DaemonSet": ("AppsV1Api", "read_namespaced_daemon_set", True),
    "Job": ("BatchV1Api", "read_namespaced_job", True),
    # a node's kubelet heartbeat (kube-node-lease), where the node read cannot ask systemd
    "Lease": ("CoordinationV1Api", "read_namespaced_lease", True),
    # the node agent's RuntimeClass (gpubot doctor): without it the agent's pods are never created
    "RuntimeClass": ("NodeV1Api", "read_runtime_class", False),
}


#: kind -> (the group/version's API path, the resource): the path the client's method for it GETs
_PATHS: dict[str, tuple[str, str]] = {
    "Pod": ("/api/v1", "pods"),
    "Node": ("/api/v1", "nodes"),
    "Namespace": ("/api/v1", "namespaces"),
    "Event": ("/api/v1", "events"),
    "ResourceQuota": ("/api/v1", "resourcequotas"),
    "ReplicaSet": ("/apis/apps/v1", "replicasets"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "DaemonSet": ("/apis/apps/v1", "daemonsets"),
    "Job": ("/apis/batch/v1", "jobs"),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases"),
    "RuntimeClass": ("/apis/node.k8s.io/v1", "runtimeclasses"),
}


def api_path(prefix: str, plural: str, namespace: str = "", name: str = "") -> str:
    """``/api/v1/namespaces/NS/pods/NAME`` and its shorter forms, each part quoted: the names were
    validated before they got here, and a path is never built from unquoted text."""
    ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    return f"{prefix}{ns}/{plural}" + (f"/{quote(name, safe='')}" if name else "")


def _kind_path(kind: str, namespace: str = "", name: str = "") -> str:
    prefix, plural = _PATHS[kind]
    return api_path(prefix, plural, namespace, name)


class KubeReads(Protocol):
    """What diagnoses may read; implemented by the API reader and by the watch-fed cache."""

    async def get_object(self, kind: str, name: str, namespace: str = "") -> Obj: ...

    async def list_pods(
        self, namespace: str = "", *, label_selector: str = "", field_selector: str = ""
    ) -> list[Obj]: ...

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]: ...

    async def list_namespaces(self) -> list[Obj]: ...

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[Obj]: ...

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]: ...

    async def list_deployments(self, *, label_selector: str = "") -> list[Obj]: ...

    async def list_replicasets(self, namespace: str, *, label_selector: str = "") -> list[Obj]: ...

    async def list_resourcequotas(self, namespace: str) -> list[Obj]: ...

    async def list_custom(
        self, group: str, version: str, plural: str, namespace: str = "", *, label_selector: str = ""
    ) -> list[Obj]: ...

    async def get_custom(self, group: str, version: str, plural: str, name: str, namespace: str = "") -> Obj: ...

    async def served(self, group: str, version: str) -> bool: ...

    # -- views derived from the reads above (``bot.probes.views``): a plain reader derives them,
    # -- the watch-fed cache answers them from its indexes
    async def node_map(self) -> dict[str, Obj]: ...

    async def component_pods(self, controller: Obj) -> list[Obj]: ...

    async def slim_pods(
        self, *, field_selector: str = "", nodes: set[str] | None = None, all_nodes: int = 0
    ) -> list[SlimPod]: ...

    async def slim_pods_by_node(
        self, nodes: Collection[str], *, all_nodes: int = 0, failed: FailedRead | None = None
    ) -> dict[str, list[SlimPod]]: ...


#: how long the API groups the server serves are trusted (installing Kueue is rare; a restart of
#: the bot is not needed to see it)
DISCOVERY_TTL_S = 600.0


@dataclass
class ReadStats:
    """Counts of API requests made, for reports and benchmarks."""

    requests: int = 0
    bytes_received: int = 0
    by_call: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, call: str, size: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes_received += size
            self.by_call[call] = self.by_call.get(call, 0) + 1


def _transient(exc: BaseException) -> bool:
    """Retry what a second try can fix: 429, 5xx, a dropped connection or a silent server; never
    a 4xx answer, a TLS failure or rejected credentials (the same request gets the same answer)."""
    if isinstance(exc, KubeApiError):
        if exc.status is not None:
            return exc.status == 429 or exc.status >= 500
        return exc.kind in ("unreachable", "timeout")
    return False


def _api_error(exc: BaseException, read: ApiRead, server: str, *, timeout_s: float | None = None) -> KubeApiError:
    """Translate client errors into ours, classified; the message never carries credentials."""
    kind, detail, status = classify(exc, timeout_s=timeout_s)
    what = read.text()
    if kind == "not_found":
        return NotFoundError(f"{what}: not found", read=read, server=server)
    message = f"{what}: API unreachable ({detail})" if kind == "unreachable" else f"{what}: {detail}"
    return KubeApiError(message, status=status, kind=kind, read=read, server=server, detail=detail)


#: a request is not started with less than this left before the command's deadline: it could not
#: be answered in time, and its thread would outlive the command
MIN_REQUEST_S = 0.05
#: worker threads for the blocking client's requests: its own pool, so that requests to a server
#: that never answers cannot starve the default executor (where checks run) or hold up the exit
READ_THREADS = 32
_GROUPS = {
    "CoreV1Api": "",
    "AppsV1Api": "apps",
    "BatchV1Api": "batch",
    "CoordinationV1Api": "coordination.k8s.io",
    "NodeV1Api": "node.k8s.io",
}


def _listing(resource: str, namespace: str, sel: dict[str, str], group: str = "") -> ApiRead:
    return ApiRead("list", resource, namespace, group=group, selector=",".join(sel.values()))


#: what a request hands back to the event loop (``KubeReader._send``)
_T = TypeVar("_T")


def _check_declared(group: str, plural: str) -> None:
    """A custom read outside ``bot.kube.custom_resources`` is a bug: the chart grants no RBAC for it."""
    if not declared(group, plural):
        raise KubeApiError(f"{group}/{plural}: not a custom resource gpubot declares (bot.kube.custom_resources)")


#: a page's kept items, its continue token, and the next page as asked for ahead (its token and
#: the future of that page's own result), if it was (``_PagesAhead``)
_Page = tuple[list[Any], str, "tuple[str, concurrent.futures.Future[Any]] | None"]


class _PagesAhead:
    """One list walk's pages, each asked for as soon as the page before it has arrived.

    Why: parsing a page of 500 realistic nodes takes ~15 ms, and the API server takes its own
    time to prepare the next one; asked for only after the parse (as the walk did), each page
    waited for both in turn. The next page's continue token is read from the head of the answer
    (``bot.probes.list_pages``) and that page is asked for in another reading thread, with the
    same retries and deadline (``KubeReader._send_blocking``), while this thread parses. The
    walk uses that answer only when the parsed token is the one it was asked with.
    """

    def __init__(
        self, reader: KubeReader, read: ApiRead, call: str, page: Callable[[str], Callable[[float], bytes]],
        parse: Callable[[bytes], tuple[list[Any], str]], deadline: float | None,
    ) -> None:
        self.reader, self.read, self.call, self.page, self.parse, self.deadline = (
            reader, read, call, page, parse, deadline)
        #: set when the walk ends (done, failed, cancelled) or stops reading ahead: no page is asked for after
        self.stopped = False

    def finish(self, data: bytes) -> _Page:
        """In the reading thread that received ``data``: ask for the next page, then parse this one."""
        asked = None
        token = "" if self.stopped else continue_ahead(data)
        if token:
            send = self.page(token)
            asked = (token, self.reader._pool.submit(
                self.reader._send_blocking, self.read, self.call, send, self.finish, self.deadline))
        kept, parsed_token = self.parse(data)
        return kept, parsed_token, asked


class KubeReader(DerivedViews):
    """Reads from the API server: get, and lists paginated with ``limit``/``continue``.

    Every request is bounded by ``timeout`` and by what is left of the command's deadline
    (``bot.probes.deadline``); retries of transient failures stop when the deadline would not
    leave time for one more.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        page_size: int = 500,
        timeout: float = 10.0,
        attempts: int = 3,
    ) -> None:
        self._client = api_client
        self._apis = {name: LazyApi(api_client, name) for name in (*_GROUPS, "CustomObjectsApi", "ApisApi")}
        self._core = self._apis["CoreV1Api"]
        self._apps = self._apis["AppsV1Api"]
        self._batch = self._apis["BatchV1Api"]
        self.page_size = page_size
        self.timeout = timeout
        self.attempts = attempts
        self.stats = ReadStats()
        #: the API server's URL, without credentials, for reports of what could not be read
        self.server = safe_url(str(getattr(api_client.configuration, "host", "") or ""))
        self._pool = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="kube-read")
        self._custom = self._apis["CustomObjectsApi"]
        #: the per-node pod lists' kept connections, where the client's settings allow them
        self._gets = KeptGets.for_client(api_client)
        #: (read at, served group/versions) from ``/apis``: read once, shared by every command
        self._discovery: tuple[float, frozenset[str]] | None = None
        #: the node list asked for ahead (``start_node_prefetch``), until a ``list_nodes`` takes it
        self._prefetched_nodes: concurrent.futures.Future[list[Obj]] | None = None

    def _api(self, name: str) -> LazyApi:
        return self._apis[name]

    def _out_of_time(self, read: ApiRead, tries: int) -> KubeApiError:
        if tries:
            detail = f"not answered within the command's deadline ({tries} {'try' if tries == 1 else 'tries'})"
        else:
            detail = "not asked: the command's deadline had passed"
        return KubeApiError(f"{read.text()}: {detail}", kind="timeout", read=read, server=self.server, detail=detail)

    async def _call(self, read: ApiRead, fn: Callable[..., Any], *args: Any, _path: str = "", **kwargs: Any) -> Obj:
        """One request with bounded retries on transient failures; returns the parsed body. Over
        the kept connection where there is one and ``_path`` (what ``fn(*args, **kwargs)`` GETs,
        with its query) is given; else through the client's ``fn``."""
        send = self._sender(fn, args, kwargs, _path)
        return await self._send(read, getattr(fn, "__name__", read.text()), send, partial(self._parsed, read))

    def _sender(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], path: str
    ) -> Callable[[float], bytes]:
        """``send(timeout)`` → the raw answer of ``fn(*args, **kwargs)``: over the kept connection
        where there is one and the request's ``path`` is known, else through the client's method."""
        if path and self._gets is not None:
            return partial(self._gets.get, path)

        def send(timeout: float) -> bytes:
            return bytes(fn(*args, **kwargs, _preload_content=False, _request_timeout=timeout).data)

        return send

    def _parsed(self, read: ApiRead, data: bytes) -> Obj:
        """An answer's JSON object (orjson: a third of json.loads's time on API lists)."""
        try:
            parsed = orjson.loads(data)
        except ValueError:
            raise KubeApiError(f"{read.text()}: API answered something that is not JSON", kind="failed",
                               read=read, server=self.server, detail="an answer that is not JSON") from None
        if not isinstance(parsed, dict):
            raise KubeApiError(f"{read.text()}: API answered an unexpected document", kind="failed",
                               read=read, server=self.server, detail="an unexpected document")
        return parsed

    def _kept_page(
        self, read: ApiRead, keep: Callable[[Obj], Any] | None, shrink: Callable[[bytes], bytes] | None, data: bytes,
        *, lazy: bool = False,
    ) -> tuple[list[Any], str]:
        """One list page's items, each with its ``kind`` (list items carry none) and kept as
        ``keep(item)``, and the page's continue token. Run in the reading thread with the request,
        so a page costs the event loop one hand-over, whatever its size. ``shrink``: what is cut
        from the answer before it is parsed (``bot.probes.node_images``); should the cut answer
        not parse, the answer is parsed as it came. ``lazy``: ``keep`` takes lazily parsed items
        too (``bot.probes.lazy_pods``), which carry no ``kind``; a page that does not parse so is
        decoded whole."""
        if lazy and keep is not None:
            from bot.probes.lazy_pods import kept_items  # with simdjson: only where a walk is lazy

            if (page := kept_items(data, keep)) is not None:
                return page
        body: Obj | None = None
        if shrink is not None and (small := shrink(data)) is not data:
            with contextlib.suppress(KubeApiError):
                body = self._parsed(read, small)
        if body is None:
            body = self._parsed(read, data)
        kind = str(body.get("kind", "")).removesuffix("List")
        items: list[Any] = []
        for item in body.get("items") or []:
            if kind and "kind" not in item:
                item["kind"] = kind
            items.append(keep(item) if keep is not None else item)
        return items, str(meta_of(body).get("continue") or "")

    def _once(
        self, read: ApiRead, call: str, send: Callable[[float], bytes], finish: Callable[[bytes], _T], timeout: float
    ) -> _T:
        """One try, blocking (in a reading thread): ``finish(send(timeout))``, client errors ours."""
        try:
            data = send(timeout)
        except Exception as exc:  # noqa: BLE001 - translated at this boundary
            raise _api_error(exc, read, self.server, timeout_s=timeout) from None
        self.stats.record(call, len(data))
        return finish(data)

    def _try_timeout(self, read: ApiRead, tries: int, left: float | None) -> float:
        """The next try's timeout, with ``left`` seconds before the deadline (None: no deadline)."""
        if left is not None and left < MIN_REQUEST_S:
            raise self._out_of_time(read, tries)
        return self.timeout if left is None else min(self.timeout, left)

    def _retry_pause(self, exc: KubeApiError, tries: int, left: float | None) -> float:
        """How long to wait before trying again after ``exc`` (the ``tries``-th failure); raises
        ``exc`` when it is not worth another try (not transient, the last try, or too late)."""
        pause = min(2.0, 0.2 * 2 ** (tries - 1))
        last = tries >= self.attempts or (left is not None and left < pause + MIN_REQUEST_S)
        if not _transient(exc) or last:
            if tries > 1 and exc.kind == "failed":
                exc.detail += f" after {tries} tries"
                exc.user_message += f" after {tries} tries"
            raise exc
        return pause

    async def _send(
        self, read: ApiRead, call: str, send: Callable[[float], bytes], finish: Callable[[bytes], _T]
    ) -> _T:
        """One request (``send(timeout)`` → the body) with bounded retries on transient failures;
        returns ``finish(body)``, worked out in the same reading thread. ``call`` names it in the stats."""
        loop = asyncio.get_running_loop()
        tries = 0
        while True:
            timeout = self._try_timeout(read, tries, remaining())
            tries += 1
            try:
                return await loop.run_in_executor(self._pool, self._once, read, call, send, finish, timeout)
            except KubeApiError as exc:
                pause = self._retry_pause(exc, tries, remaining())
            await asyncio.sleep(pause)

    def _send_blocking(
        self, read: ApiRead, call: str, send: Callable[[float], bytes], finish: Callable[[bytes], _T],
        deadline: float | None,
    ) -> _T:
        """``_send`` for a reading thread that makes many requests in a row (``_per_node_lists``),
        under the command's ``deadline`` (``time.monotonic()``; None: none)."""
        tries = 0
        while True:
            timeout = self._try_timeout(read, tries, None if deadline is None else deadline - time.monotonic())
            tries += 1
            try:
                return self._once(read, call, send, finish, timeout)
            except KubeApiError as exc:
                pause = self._retry_pause(exc, tries, None if deadline is None else deadline - time.monotonic())
            time.sleep(pause)

    async def _list(self, read: ApiRead, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Obj]:
        """Walk every page; never one unbounded request."""
        return await self._walk(read, None, fn, *args, **kwargs)

    async def _walk(
        self, read: ApiRead, keep: Callable[[Obj], Any] | None, fn: Callable[..., Any], *args: Any,
        _path: str = "", _shrink: Callable[[bytes], bytes] | None = None, _lazy: bool = False, **kwargs: Any,
    ) -> list[Any]:
        """Walk every page, keeping ``keep(item)`` (or the item) so each page can be freed as we go;
        ``keep`` runs in the reading thread (it must only read the item). ``_path``: the list's API
        path, for the kept connection (``_call``); ``_shrink``: what to cut from each page before it
        is parsed, and ``_lazy``: whether ``keep`` takes lazily parsed items (``_kept_page``)."""
        page = self._paging(fn, args, kwargs, _path)
        call = getattr(fn, "__name__", read.text())
        finish = partial(self._kept_page, read, keep, _shrink, lazy=_lazy)
        ahead = _PagesAhead(self, read, call, page, finish, DEADLINE.get())
        items: list[Any] = []
        asked = None
        try:
            kept, token, asked = await self._send(read, call, page(""), ahead.finish)
            while True:
                items += kept
                if not token:
                    return items
                if asked is not None and asked[0] == token:
                    kept, token, asked = await asyncio.wrap_future(asked[1])
                else:  # read ahead with another token (or not at all): that answer is not used
                    ahead.stopped = True
                    if asked is not None:
                        asked[1].cancel()  # not sent at all if no reading thread has taken it yet
                    kept, token, asked = await self._send(read, call, page(token), ahead.finish)
        finally:
            ahead.stopped = True  # a failed or cancelled walk asks for no further page
            if asked is not None:
                asked[1].cancel()

    def _paging(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], path: str
    ) -> Callable[[str], Callable[[float], bytes]]:
        """``page(token)`` → the sender (``_sender``) of a list's page after the continue ``token``
        ("": the first page); ``kwargs``: the list method's selectors (and ``page_size``)."""
        limit = max(self.page_size, int(kwargs.pop("page_size", 0) or 0))
        query = {"labelSelector": kwargs.get("label_selector", ""), "fieldSelector": kwargs.get("field_selector", "")}
        query = {k: v for k, v in query.items() if v} | {"limit": str(limit)}
        if set(kwargs) - {"label_selector", "field_selector"}:
            path = ""  # a parameter the query above does not carry: the client's method builds it

        def page(token: str) -> Callable[[float], bytes]:
            page_kwargs = dict(kwargs, limit=limit)
            if token:
                page_kwargs["_continue"] = token
            target = path and f"{path}?{urlencode({**query, 'continue': token} if token else query)}"
            return self._sender(fn, args, page_kwargs, target)

        return page

    def _pods_of_node(self, node: str, deadline: float | None) -> list[SlimPod]:
        """The pods bound to ``node``, slimmed: every page, blocking, in a reading thread that
        reads many nodes in a row (``_per_node_lists``), under the command's ``deadline``."""
        selector = f"spec.nodeName={node}"
        read = ApiRead("list", "pods", selector=selector)
        fn = self._core.list_pod_for_all_namespaces
        page = self._paging(fn, (), {"field_selector": selector}, "/api/v1/pods")
        call = getattr(fn, "__name__", read.text())
        finish = partial(self._kept_page, read, slim, None)
        items: list[SlimPod] = []
        token = ""
        while True:
            kept, token = self._send_blocking(read, call, page(token), finish, deadline)
            items += kept
            if not token:
                return items

    async def _per_node_lists(self, nodes: list[str]) -> dict[str, list[SlimPod]]:
        """Each node's pods (one field-selected list a node), read by ``PER_NODE_CONCURRENCY``
        reading threads that take the nodes in turn and each read theirs one after another.

        Why threads that loop rather than a task a node: a task hands every request to a thread
        and back (a queue, a wake-up, the loop's self-pipe, the GIL changing hands), which at 500
        nodes cost more than the requests' own CPU (5,000 nodes: the whole command ~50 ms less
        this way). The first failure (or the command's cancellation) stops every thread before its
        next node; the failure is raised."""
        queue = iter(nodes)
        taken = threading.Lock()
        stop = threading.Event()
        found: dict[str, list[SlimPod]] = {}
        deadline = DEADLINE.get()

        def reader() -> None:
            while not stop.is_set():
                with taken:
                    node = next(queue, None)
                if node is None:
                    return
                try:
                    found[node] = self._pods_of_node(node, deadline)
                except BaseException:
                    stop.set()
                    raise

        loop = asyncio.get_running_loop()
        readers = min(PER_NODE_CONCURRENCY, len(nodes))
        try:
            await asyncio.gather(*(loop.run_in_executor(self._pool, reader) for _ in range(readers)))
        finally:
            stop.set()  # a failure or a cancelled command: no thread starts another node
        return found

    async def get_object(self, kind: str, name: str, namespace: str = "") -> Obj:
        """Read one object; raises NotFoundError when it does not exist."""
        api_name, method, namespaced = _READERS[kind]
        fn = getattr(self._api(api_name), method)
        read = ApiRead("get", kind.lower() + "s", namespace if namespaced else "", name, _GROUPS[api_name])
        path = _kind_path(kind, namespace if namespaced else "", name)
        obj = await (self._call(read, fn, name, namespace, _path=path) if namespaced
                     else self._call(read, fn, name, _path=path))
        obj.setdefault("kind", kind)
        return obj

    async def list_pods(self, namespace: str = "", *, label_selector: str = "", field_selector: str = "") -> list[Obj]:
        sel = {"label_selector": label_selector, "field_selector": field_selector}
        sel = {k: v for k, v in sel.items() if v}
        path = _kind_path("Pod", namespace)
        if namespace:
            return await self._list(_listing("pods", namespace, sel), self._core.list_namespaced_pod, namespace,
                                    _path=path, **sel)
        return await self._list(_listing("pods", "", sel), self._core.list_pod_for_all_namespaces, _path=path, **sel)

    async def slim_pods(
        self, *, field_selector: str = "", nodes: set[str] | None = None, all_nodes: int = 0
    ) -> list[SlimPod]:
        """Pods as slim records: all of them, or (``nodes``) only those bound to these nodes.

        Decoding JSON is most of a cold read, so with up to ``PER_NODE_SLIM_LIMIT`` nodes that are
        at most ``PER_NODE_SLIM_SHARE`` of the cluster's ``all_nodes``, only their pods are read
        (one field-selected list per node); otherwise every pod is walked in
        pages, each page slimmed (and pods on other nodes dropped) as it arrives, so at 100k pods
        one page of full objects is in memory instead of all of them.
        """
        few = nodes is not None and len(nodes) <= min(PER_NODE_SLIM_LIMIT, PER_NODE_SLIM_SHARE * all_nodes)
        if nodes is not None and few and not field_selector:
            ordered = sorted(nodes)
            found = await self._per_node_lists(ordered)
            return [p for node in ordered for p in found[node]]
        from bot.probes.lazy_pods import node_of, skeleton  # simdjson: not in the per-node reads above

        sel: dict[str, Any] = {"field_selector": field_selector} if field_selector else {}
        wanted = nodes

        def keep(pod: Any) -> SlimPod | None:
            # parsed lazily (the pages of every pod: only the kept pods' few fields are built, and
            # only of the pods on the wanted nodes), or whole where a page does not parse so
            if wanted is not None and node_of(pod) not in wanted:
                return None
            return slim(pod if isinstance(pod, dict) else skeleton(pod))

        pods = await self._walk(
            _listing("pods", "", sel), keep, self._core.list_pod_for_all_namespaces, page_size=SLIM_PAGE_SIZE,
            _path="/api/v1/pods", _lazy=True, **sel,
        )
        return [p for p in pods if p is not None]

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]:
        """Every node, its ``status.images`` left empty: no check reads it, and it is most of a node's
        JSON (``bot.probes.node_images``; the watch-fed cache drops it too). Without a selector,
        the answer of a ``start_node_prefetch`` when one is waiting (once: a later call reads again)."""
        if not label_selector and self._prefetched_nodes is not None:
            answer, self._prefetched_nodes = self._prefetched_nodes, None
            return await asyncio.wrap_future(answer)
        return await self._read_nodes(label_selector)

    def start_node_prefetch(self) -> None:
        """Ask for every node now, in a thread of its own, within the caller's deadline (its
        context is carried over); the next ``list_nodes()`` takes the answer, or raises what the
        read raised, as if it had read then.

        Why: the one-shot CLI's longest read is the node list (at 5,000 nodes ten pages of 5 MB,
        ~0.24 s parsed as they come), and nothing it asks depends on the engine, whose import
        (its modules, its checks) comes after the cluster's clients. Asked for as soon as the
        clients are built, the pages come in and are parsed while the engine is imported
        (``bot.cli``, ``KubeClients(prefetch_nodes=True)``)."""
        answer: concurrent.futures.Future[list[Obj]] = concurrent.futures.Future()

        def read() -> None:
            # running from here on: a taker that gives up (cancelled) cannot cancel the answer
            # under this thread, whose result would then have nowhere to go but a traceback
            if not answer.set_running_or_notify_cancel():
                return  # given up before the read began
            try:
                answer.set_result(asyncio.run(self._read_nodes("")))
            except BaseException as exc:  # noqa: BLE001 - raised again by the list_nodes that takes it
                answer.set_exception(exc)

        self._prefetched_nodes = answer
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(read,), name="node-prefetch", daemon=True).start()

    async def _read_nodes(self, label_selector: str) -> list[Obj]:
        sel: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        return await self._walk(_listing("nodes", "", sel), None, self._core.list_node, _path="/api/v1/nodes",
                                _shrink=without_images, **sel)

    async def list_namespaces(self) -> list[Obj]:
        return await self._list(ApiRead("list", "namespaces"), self._core.list_namespace, _path="/api/v1/namespaces")

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[Obj]:
        sel = {"field_selector": field_selector} if field_selector else {}
        if namespace:
            read = _listing("events", namespace, sel)
            return await self._list(read, self._core.list_namespaced_event, namespace,
                                    _path=_kind_path("Event", namespace), **sel)
        return await self._list(_listing("events", "", sel), self._core.list_event_for_all_namespaces,
                                _path=_kind_path("Event"), **sel)

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]:
        sel = {"label_selector": label_selector} if label_selector else {}
        read = _listing("daemonsets", "", sel, "apps")
        return await self._list(read, self._apps.list_daemon_set_for_all_namespaces, _path=_kind_path("DaemonSet"),
                                **sel)

    async def list_deployments(self, *, label_selector: str = "") -> list[Obj]:
        sel = {"label_selector": label_selector} if label_selector else {}
        read = _listing("deployments", "", sel, "apps")
        return await self._list(read, self._apps.list_deployment_for_all_namespaces, _path=_kind_path("Deployment"),
                                **sel)

    async def list_replicasets(self, namespace: str, *, label_selector: str = "") -> list[Obj]:
        sel = {"label_selector": label_selector} if label_selector else {}
        read = _listing("replicasets", namespace, sel, "apps")
        return await self._list(read, self._apps.list_namespaced_replica_set, namespace,
                                _path=_kind_path("ReplicaSet", namespace), **sel)

    async def list_resourcequotas(self, namespace: str) -> list[Obj]:
        """The namespace's ResourceQuotas: a pod they refuse is never created, so no pod says why."""
        read = ApiRead("list", "resourcequotas", namespace)
        return await self._list(read, self._core.list_namespaced_resource_quota, namespace,
                                _path=_kind_path("ResourceQuota", namespace))

    # -- custom resources (Kueue, Volcano, KAI, DRA): only where the server serves them ---------
    async def served(self, group: str, version: str) -> bool:
        """Whether ``/apis`` lists ``group/version``: one request per ``DISCOVERY_TTL_S``, so a
        cluster without Kueue or Volcano pays one read for all of them, then none."""
        now = time.monotonic()
        if self._discovery is None or now - self._discovery[0] > DISCOVERY_TTL_S:
            body = await self._call(ApiRead("list", "API groups"), self._apis["ApisApi"].get_api_versions,
                                    _path="/apis/")
            found = {
                str(v.get("groupVersion"))
                for g in body.get("groups") or []
                if isinstance(g, dict)
                for v in g.get("versions") or []
                if isinstance(v, dict)
            }
            self._discovery = (now, frozenset(found))
        return f"{group}/{version}" in self._discovery[1]

    async def list_custom(
        self, group: str, version: str, plural: str, namespace: str = "", *, label_selector: str = ""
    ) -> list[Obj]:
        """Custom objects; [] when the group/version is not served (not installed is no error)."""
        _check_declared(group, plural)
        if not await self.served(group, version):
            return []
        sel = {"label_selector": label_selector} if label_selector else {}
        read = _listing(plural, namespace, sel, group)
        path = api_path(f"/apis/{group}/{version}", plural, namespace)
        try:
            if namespace:
                fn = self._custom.list_namespaced_custom_object
                return await self._list(read, fn, group, version, namespace, plural, _path=path, **sel)
            return await self._list(read, self._custom.list_cluster_custom_object, group, version, plural,
                                    _path=path, **sel)
        except NotFoundError:
            return []  # the CRD went away between discovery and the list

    async def get_custom(self, group: str, version: str, plural: str, name: str, namespace: str = "") -> Obj:
        """One custom object; NotFoundError when it, or its whole API, does not exist."""
        _check_declared(group, plural)
        read = ApiRead("get", plural, namespace, name, group)
        if not await self.served(group, version):
            raise NotFoundError(f"{read.text()}: not found ({group}/{version} is not served)", read=read,
                                server=self.server)
        path = api_path(f"/apis/{group}/{version}", plural, namespace, name)
        if namespace:
            fn = self._custom.get_namespaced_custom_object
            return await self._call(read, fn, group, version, namespace, plural, name, _path=path)
        return await self._call(read, self._custom.get_cluster_custom_object, group, version, plural, name, _path=path)

    def close(self) -> None:
        # never wait here for a request a silent server still holds: its own timeout ends it
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._gets is not None:
            self._gets.close()
        self._client.close()
