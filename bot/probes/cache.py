"""The watch-fed cache: the long-running bot's ``KubeReads`` without listing 100k pods per question.

One reflector thread per kind keeps a local copy with list+watch and resourceVersion, as
client-go informers do: a paginated list, then a watch from the list's version, applying events
in stream order; a ``410 Gone``/Expired answer (the version was compacted away) means relist.
Pods are kept as ``SlimPod`` records only (name, namespace, uid, node, phase,
deletionTimestamp, controller owner, GPU requests); nodes, namespaces, DaemonSets,
Deployments and ResourceQuotas (few, and read whole by the checks) are kept as the API served
them, less ``managedFields`` and a node's image list, volumes and kubelet endpoint (``trimmed``);
nodes with their strings interned, and marked as their events arrive (``node_map``) by the
predicate the reads interface hands the cache (``bot.probes.views.Kept``: GPU or not).
Relist pages shrink to about ``RELIST_PAGE_BYTES`` of JSON whatever the configured page size,
and the next page is asked for while this one is decoded (``list_head``), so the API server's
encoding and our decoding overlap instead of taking turns. Pod pages are parsed lazily where
``simdjson`` is installed and only the fields the slim records read are built (``skeleton``):
decoding every object of realistic pods made the sync slower than a plain download of them all.
The pods of the DaemonSets ``Kept.whole_pods_of`` accepts (for the diagnoses: the GPU stack's device
plugins, qGPU, the operator's operands, judged from the owner's name and the pod's labels) are
also kept whole (``trimmed``): every question reads their container states, and at 500 GPU
nodes a label-selected list of one DaemonSet's pods was 3 MB of JSON per question. They are
served (``component_pods``) only when every pod the DaemonSet owns was kept.

Reads are served from the cache only while it is *ready* (every kind listed once) and *fresh*
(an event, a bookmark or a watch (re)connect within ``staleness_s``); otherwise, and for
anything the cache does not hold (``get_object``, events, ReplicaSets, whole pods, the pods of a
GPU Deployment), they go to the fallback API reader. Pods are served as the slim records they are
kept as (``slim_pods``, ``slim_pods_by_node``), never as dicts that look whole but are not: a
namespace's pods listed for their annotations (a gang's members) must have them. Lists come in key
order, the order the API lists in.

It must never write to the cluster, and never hand out its own stored dicts for mutation:
callers treat returned objects as read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import orjson
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from bot.kube.node_map import NodeMap
from bot.kube.objects import labels_of
from bot.kube.selectors import SelectorError, labels_match, parse_label_selector, selector_string
from bot.probes.kube import KubeReads, Obj, ReadStats
from bot.probes.lazy_pods import plain as _plain
from bot.probes.lazy_pods import skeleton
from bot.probes.slim import SlimPod, slim
from bot.probes.views import KEEP_NOTHING, FailedRead, Kept

simdjson: Any
try:  # optional: reads a page's few kept pod fields without building every object of the page
    import simdjson
except ImportError:  # pragma: no cover - orjson decodes whole pages instead
    simdjson = None

log = logging.getLogger(__name__)

def slim_record(pod: Obj) -> SlimPod:
    """``slim(pod)`` with repeated strings interned, so 100k records share namespaces, nodes and
    owners (a workload's replicas share theirs)."""
    return slim(pod, sys.intern)


def lazy_node(obj: Any) -> Obj:
    """``trimmed`` for a lazily parsed node, without building what it drops (its forty images and
    its ``managedFields`` were most of its 10 kB)."""
    out: Obj = {}
    for key, value in obj.items():
        if key == "metadata":
            out[key] = {k: _plain(v) for k, v in value.items() if k != "managedFields"}
        elif key == "status":
            out[key] = {k: _plain(v) for k, v in value.items() if k not in _NODE_STATUS_DROPPED}
        else:
            out[key] = _plain(value)
    return out


#: a node's status fields no check reads and that grow with the node's life: its image list
#: (forty-odd names and sizes), its volumes, the kubelet's endpoint
_NODE_STATUS_DROPPED = frozenset({"images", "volumesInUse", "volumesAttached", "daemonEndpoints"})


def trimmed(obj: Obj) -> Obj:
    """``obj`` without what no check reads and that makes up much of a real object: the
    ``managedFields`` of every kind (client-go informers drop them the same way) and a node's
    ``_NODE_STATUS_DROPPED``. Kept objects are otherwise whole."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    status = obj.get("status")
    if obj.get("kind") == "Node" and isinstance(status, dict) and not _NODE_STATUS_DROPPED.isdisjoint(status):
        obj["status"] = {k: v for k, v in status.items() if k not in _NODE_STATUS_DROPPED}
    return obj


def component_owner(pod: Obj, kept: Kept) -> str:
    """``DaemonSet/NAME`` when a DaemonSet ``kept.whole_pods_of`` accepts owns the pod (its whole
    object is kept), else ""."""
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "DaemonSet":
            name = str(ref.get("name") or "")
            return f"DaemonSet/{name}" if kept.whole_pods_of(name, meta.get("labels") or {}) else ""
    return ""


class _Fresh(dict[tuple[str, str], Any]):
    """A relist's map being built page by page, with the whole component pods beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.full: dict[tuple[str, str], Obj] = {}


def interned(value: Any) -> Any:
    """``value`` with every string interned, keys and values alike. Nodes repeat most of their
    strings (condition reasons and messages, label values, versions): shared, a kept node takes
    about half the memory, which is 20 MB at 5,000 nodes. Interned strings are freed with their
    last user, so unique values (a node's name) cost nothing extra."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interned(v) for v in value]
    return value


#: about how many bytes of JSON one relist page should hold. A decoded page is several times its
#: JSON and its objects are freed once slimmed, but the records kept meanwhile pin the allocator's
#: arenas, so the process keeps roughly its largest page's worth for good: pages of 500 realistic
#: pods (6.6 kB each) cost tens of MB of resident memory that 1 MB pages do not
RELIST_PAGE_BYTES = 1_000_000
#: the fewest items a relist page asks for, so huge objects do not turn a relist into one request each
MIN_RELIST_PAGE = 50
#: the first page's ``limit``, before the size of the kind's objects is known
FIRST_RELIST_PAGE = 100


def page_limit(page_size: int, page_bytes: int, items: int) -> int:
    """The next relist page's ``limit``: ``page_size`` at most, fewer when the last page's objects
    were large (``RELIST_PAGE_BYTES``)."""
    if items <= 0:
        return page_size
    fitting = RELIST_PAGE_BYTES * items // max(page_bytes, 1)
    return max(min(page_size, MIN_RELIST_PAGE), min(page_size, fitting))


def list_head(data: bytes) -> Obj | None:
    """A list answer's top level without its items (``kind``, ``metadata`` with the continue token),
    read from the bytes before ``"items"``; None where the answer does not put its metadata first
    (the API server's encoding does: the list's type and metadata, then the items)."""
    at = data.find(b'"items":', 0, 4096)
    if at <= 0:
        return None
    try:
        head = orjson.loads(data[:at] + b'"items":null}')
    except orjson.JSONDecodeError:
        return None
    return head if isinstance(head, dict) and isinstance(head.get("metadata"), dict) else None


def release_freed_memory() -> None:
    """Hand the memory a relist freed back to the system where the C library can (glibc's
    ``malloc_trim``): the relist threads' pages were allocated in per-thread malloc arenas that
    keep what was freed; trimmed, a synced cache at 1k nodes / 20k pods was 7 MB smaller."""
    import ctypes  # only here: the one-shot commands never relist

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


class _Reflector:
    """List then watch one kind from a thread; keeps ``rv`` across stop/start so a restart resumes."""

    def __init__(
        self,
        kind: str,
        list_fn: Callable[..., Any],
        store: _Store,
        *,
        page_size: int,
        watch_timeout_s: float,
        stats: ReadStats,
        clock: Callable[[], float],
    ) -> None:
        self.kind = kind
        self.list_fn = list_fn
        self.store = store
        self.page_size = page_size
        self.watch_timeout_s = watch_timeout_s
        self.stats = stats
        self.clock = clock
        self.rv: str | None = None
        self.synced = False
        self.last_contact = float("-inf")
        self.relists = 0
        self.events = 0
        self._stop = threading.Event()
        self._resp: Any = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"watch-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        resp = self._resp
        if resp is not None:
            # unblocks the thread's read (urllib3 >= 2.3); best effort, the read timeout ends it anyway
            with contextlib.suppress(Exception):
                resp.shutdown()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            try:
                if self.rv is None:
                    self._relist()
                began = self.clock()
                self._watch()
                if self.clock() - began >= 1.0:
                    backoff = 0.2
                else:  # a watch that ends at once (410, a proxy closing it): do not spin
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 10.0)
            except Exception as exc:  # noqa: BLE001 - any failure: back off, then resume or relist
                if self._stop.is_set():
                    return
                log.warning("watch %s: %s; retrying", self.kind, type(exc).__name__)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)

    # -- list and watch -------------------------------------------------------------------
    def _relist(self) -> None:
        """List every page into a fresh map, each page turned into stored values (slim records for
        pods) as it arrives, so at most two pages of full objects (the one being decoded and the
        next one being read) are alive besides the old store.

        The next page is asked for as soon as this page's continue token is known (``list_head``,
        before its items are decoded), from a helper thread: the server prepares page N+1 while we
        decode page N. Its ``limit`` follows from this page's size: a page with a continue token is
        full, so its item count is the limit it was asked with.
        """
        fresh = _Fresh()
        first_rv = ""
        limit = min(self.page_size, FIRST_RELIST_PAGE)  # the objects' size is not known yet

        def fetch(limit: int, token: str) -> bytes:
            kwargs: dict[str, Any] = {"limit": limit, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            data: bytes = self.list_fn(**kwargs).data
            self.stats.record(f"list {self.kind}", len(data))
            return data

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"relist-{self.kind}") as ahead:
            page: Future[bytes] | None = ahead.submit(fetch, limit, "")
            while page is not None:
                data = page.result()
                page = None
                head = list_head(data)
                token = str(((head or {}).get("metadata") or {}).get("continue") or "")
                if token:  # a full page: ``limit`` items
                    limit = page_limit(self.page_size, len(data), limit)
                    page = ahead.submit(fetch, limit, token)
                size = len(data)
                body = self.store.decode(data)
                del data
                meta = _plain(body.get("metadata")) or {}
                items = body.get("items") or []
                if head is None:  # metadata not first: the next page only after this one is decoded
                    token = str(meta.get("continue") or "")
                    limit = page_limit(self.page_size, size, len(items))
                    page = ahead.submit(fetch, limit, token) if token else None
                # Resume the watch from the first page's version: every later change gets replayed,
                # and replaying one already seen is harmless (events carry whole objects).
                first_rv = first_rv or str(meta.get("resourceVersion") or "")
                self.store.add_to(fresh, items)
                del body, items
        self.store.install(fresh)
        release_freed_memory()
        self.rv = first_rv
        self.relists += 1
        self.synced = True
        self.last_contact = self.clock()

    def _watch(self) -> None:
        resp = self.list_fn(
            watch=True,
            resource_version=self.rv,
            allow_watch_bookmarks=True,
            timeout_seconds=max(1, int(self.watch_timeout_s)),
            _preload_content=False,
            _request_timeout=(10, self.watch_timeout_s + 15),
        )
        self._resp = resp
        if self._stop.is_set():  # stop() ran before _resp was set, so it could not shut it down
            resp.close()
            self._resp = None
            return
        self.stats.record(f"watch {self.kind}", 0)
        self.last_contact = self.clock()
        try:
            for line in iter_resp_lines(resp):
                if self._stop.is_set():
                    return
                if not line:
                    continue
                self.stats.bytes_received += len(line)
                event = orjson.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    code = obj.get("code")
                    log.info("watch %s: error %s %s", self.kind, code, obj.get("reason"))
                    if code in (410, 404) or obj.get("reason") in ("Expired", "Gone"):
                        self.rv = None  # compacted away: relist
                        return
                    raise RuntimeError(f"watch error {code}")
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                if kind in ("ADDED", "MODIFIED"):
                    self.store.put(obj)
                elif kind == "DELETED":
                    self.store.delete(obj)
                if rv:
                    self.rv = rv
                self.events += 1
                self.last_contact = self.clock()
            self.last_contact = self.clock()  # a clean end of a timed watch is contact too
        finally:
            self._resp = None
            resp.close()
            resp.release_conn()


class _Store:
    """Objects of one kind by key, under the cache's lock; pods slim and indexed by node."""

    def __init__(self, kind: str, lock: threading.Lock, kept: Kept) -> None:
        self.kind = kind
        self.lock = lock
        self.kept = kept
        self.slim_pods = kind == "Pod"
        self.objects: dict[tuple[str, str], Any] = {}
        #: pods only: the keys of the pods bound to each node. Lists, not sets: a node holds tens of
        #: pods, and a set's table took 80 bytes a pod against a list's 8 (8 MB at 100k pods)
        self.by_node: dict[str, list[tuple[str, str]]] = {}
        #: nodes only: the names whose own object ``kept.node_mark`` accepts (GPU or not),
        #: judged once per watch event instead of once per question
        self.marked: set[str] = set()
        #: bumped (under the lock) by every change, so views derived from the store know when to
        #: be rebuilt (``WatchCache.node_map``)
        self.generation = 0
        #: a watch added a key since the objects were last in key order, the order the API lists
        #: in (a relist's pages come in it): readers must get the order the API reader would give
        self.unordered = False
        #: pods only: how many pods each controller owns, ``(namespace, "Kind/name")``
        self.owned: dict[tuple[str, str], int] = {}
        #: pods only: the GPU-stack DaemonSets' pods kept whole, and their keys by owner
        self.full: dict[tuple[str, str], Obj] = {}
        self.full_by_owner: dict[tuple[str, str], set[tuple[str, str]]] = {}
        #: pods only, with ``simdjson``: the relists' parser (``decode``)
        self._parser: Any = None

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace") or ""), str(meta.get("name") or "")

    def _key_of(self, obj: Obj, value: Any) -> tuple[str, str]:
        """``obj``'s key, made of its slim record's own strings where they are the same: the
        namespace the record interned and the name it holds. A lazily parsed page hands out a new
        string at every read, so each key held two strings of its own (the serving process's RSS at
        5,000 nodes / 100,000 pods: about 4 MB less without them)."""
        key = self._key(obj)
        if self.slim_pods and key == (value.namespace, value.name):
            return value.namespace, value.name
        return key

    def decode(self, data: bytes) -> Any:
        """One listed page: pods parsed lazily where ``simdjson`` is installed (``skeleton``)."""
        if (self.slim_pods or self.kind == "Node") and simdjson is not None:
            # one parser kept for the relists: its buffers, allocated anew for every page, stayed
            # resident (27 MB at 20k pods); it parses again only once the last page's values are gone
            if self._parser is None:
                self._parser = simdjson.Parser()
            try:
                return self._parser.parse(data)
            except RuntimeError:  # a value of the last page still alive: parse with a parser of its own
                return simdjson.Parser().parse(data)
        return orjson.loads(data)

    def _value(self, obj: Obj) -> Any:
        if self.slim_pods:
            return slim_record(obj)
        obj.setdefault("kind", self.kind)  # list items carry no kind; the API reader adds it too
        return interned(trimmed(obj)) if self.kind == "Node" else trimmed(obj)

    def replace(self, items: list[Obj]) -> None:
        fresh = _Fresh()
        self.add_to(fresh, items)
        self.install(fresh)

    def add_to(self, fresh: _Fresh, items: list[Obj]) -> None:
        """Add one listed page to a map being built by a relist (not yet visible to readers)."""
        for item in items:
            if isinstance(item, dict):
                o = item
            elif self.slim_pods:
                o = skeleton(item)
            else:
                o = lazy_node(item)
            value = self._value(o)
            key = self._key_of(o, value)
            if self.slim_pods and component_owner(o, self.kept):
                o = item if isinstance(item, dict) else item.as_dict()
                fresh.full[key] = trimmed(o)
            fresh[key] = value

    def install(self, fresh: _Fresh) -> None:
        """Make a relist's map the store's content, with its node and owner indexes."""
        by_node: dict[str, list[tuple[str, str]]] = {}
        owned: dict[tuple[str, str], int] = {}
        full_by_owner: dict[tuple[str, str], set[tuple[str, str]]] = {}
        if self.slim_pods:
            for key, p in fresh.items():
                if p.node:
                    by_node.setdefault(p.node, []).append(key)  # keys are unique
                if p.owner:
                    owned[p.namespace, p.owner] = owned.get((p.namespace, p.owner), 0) + 1
            for key, pod in fresh.full.items():
                full_by_owner.setdefault((key[0], component_owner(pod, self.kept)), set()).add(key)
        self._parser = None  # its buffers (several times a page) until the next relist
        mark = self.kept.node_mark
        marked = {key[1] for key, obj in fresh.items() if mark(obj)} if self.kind == "Node" else set()
        with self.lock:
            self.objects = fresh
            self.unordered = False
            self.by_node = by_node
            self.marked = marked
            self.owned, self.full, self.full_by_owner = owned, fresh.full, full_by_owner
            self.generation += 1

    def put(self, obj: Obj) -> None:
        owner = component_owner(obj, self.kept) if self.slim_pods else ""
        whole = trimmed(obj) if owner else None
        value = self._value(obj)
        key = self._key_of(obj, value)
        marked = self.kind == "Node" and self.kept.node_mark(value)
        with self.lock:
            if self.kind == "Node":
                (self.marked.add if marked else self.marked.discard)(key[1])
            old = self.objects.get(key)
            self.objects[key] = value
            self.unordered = self.unordered or old is None
            self.generation += 1
            if self.slim_pods:
                if old is not None and old.node and old.node != value.node:
                    self._unbind(old.node, key)
                if value.node and (old is None or old.node != value.node):
                    self.by_node.setdefault(value.node, []).append(key)
                self._forget_owner(key, old)
                self._count_owner(key, value, whole, owner)

    def delete(self, obj: Obj) -> None:
        key = self._key(obj)
        with self.lock:
            old = self.objects.pop(key, None)
            self.generation += old is not None
            if self.kind == "Node":
                self.marked.discard(key[1])
            if self.slim_pods and old is not None:
                if old.node:
                    self._unbind(old.node, key)
                self._forget_owner(key, old)

    def _unbind(self, node: str, key: tuple[str, str]) -> None:
        """Under the lock: drop a pod's key from its node's list."""
        keys = self.by_node.get(node)
        if keys is not None and key in keys:
            keys.remove(key)
            if not keys:
                del self.by_node[node]

    def _count_owner(self, key: tuple[str, str], value: SlimPod, whole: Obj | None, owner: str) -> None:
        """Under the lock: count the pod for its controller, and keep it whole if it is a component's."""
        if value.owner:
            self.owned[key[0], value.owner] = self.owned.get((key[0], value.owner), 0) + 1
        if whole is not None:
            self.full[key] = whole
            self.full_by_owner.setdefault((key[0], owner), set()).add(key)

    def _forget_owner(self, key: tuple[str, str], old: SlimPod | None) -> None:
        """Under the lock: undo ``_count_owner`` for the pod's previous version."""
        if old is not None and old.owner:
            left = self.owned.get((key[0], old.owner), 0) - 1
            if left > 0:
                self.owned[key[0], old.owner] = left
            else:
                self.owned.pop((key[0], old.owner), None)
        was = self.full.pop(key, None)
        if was is not None:
            owner = (key[0], component_owner(was, self.kept))
            keys = self.full_by_owner.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.full_by_owner[owner]

    def ordered(self) -> dict[tuple[str, str], Any]:
        """Under the lock: the objects in key order (sorted again only after a watch added one)."""
        if self.unordered:
            self.objects = dict(sorted(self.objects.items(), key=lambda item: item[0]))
            self.unordered = False
        return self.objects

    def values(self) -> list[Any]:
        with self.lock:
            return list(self.ordered().values())


class WatchCache(KubeReads):
    """``KubeReads`` from list+watch copies, falling back to ``fallback`` when not ready or stale."""

    #: kind -> (API class, list-for-all method); pods are kept slim
    KINDS: dict[str, tuple[str, str]] = {
        "Pod": ("CoreV1Api", "list_pod_for_all_namespaces"),
        "Node": ("CoreV1Api", "list_node"),
        "Namespace": ("CoreV1Api", "list_namespace"),
        "DaemonSet": ("AppsV1Api", "list_daemon_set_for_all_namespaces"),
        "Deployment": ("AppsV1Api", "list_deployment_for_all_namespaces"),
        "ResourceQuota": ("CoreV1Api", "list_resource_quota_for_all_namespaces"),
    }

    def __init__(
        self,
        api_client: client.ApiClient,
        fallback: KubeReads,
        *,
        kept: Kept = KEEP_NOTHING,
        staleness_s: float = 120.0,
        page_size: int = 500,
        watch_timeout_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = api_client
        self.fallback = fallback
        self.staleness_s = staleness_s
        self.clock = clock
        #: the cache's own list and watch requests (the fallback reader counts its own)
        self.stats = ReadStats()
        self._lock = threading.Lock()
        self._node_map: tuple[int, NodeMap] | None = None
        apis = {"CoreV1Api": client.CoreV1Api(api_client), "AppsV1Api": client.AppsV1Api(api_client)}
        # a watch ends (and is re-opened) well inside the staleness bound, which keeps an idle
        # cluster's cache fresh even on servers that send no bookmarks
        timeout = watch_timeout_s if watch_timeout_s is not None else max(5.0, min(300.0, staleness_s / 2))
        #: what the views are about (``node_map``'s marks, ``component_pods``' owners)
        self.kept = kept
        self.stores = {kind: _Store(kind, self._lock, kept) for kind in self.KINDS}
        self.reflectors = {
            kind: _Reflector(
                kind,
                getattr(apis[api], method),
                self.stores[kind],
                page_size=page_size,
                watch_timeout_s=timeout,
                stats=self.stats,
                clock=clock,
            )
            for kind, (api, method) in self.KINDS.items()
        }

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        for r in self.reflectors.values():
            r.start()

    def stop(self) -> None:
        for r in self.reflectors.values():
            r._stop.set()
        for r in self.reflectors.values():
            r.stop()

    def close(self) -> None:
        self.stop()
        self._client.close()

    @property
    def ready(self) -> bool:
        """True once every kind has been listed: before that every read goes to the API."""
        return all(r.synced for r in self.reflectors.values())

    def fresh(self, kind: str) -> bool:
        r = self.reflectors[kind]
        return r.synced and self.clock() - r.last_contact <= self.staleness_s

    async def wait_ready(self, timeout: float = 60.0) -> bool:
        deadline = self.clock() + timeout
        while not self.ready:
            if self.clock() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def _serves(self, kind: str) -> bool:
        return self.ready and self.fresh(kind)

    # -- KubeReads ---------------------------------------------------------------------------
    async def get_object(self, kind: str, name: str, namespace: str = "") -> Obj:
        return await self.fallback.get_object(kind, name, namespace)

    async def list_pods(self, namespace: str = "", *, label_selector: str = "", field_selector: str = "") -> list[Obj]:
        """Whole pods, from the API: the cache keeps slim records, which the views serve
        (``slim_pods``, ``slim_pods_by_node``), and the GPU stack's pods (``component_pods``)."""
        return await self.fallback.list_pods(namespace, label_selector=label_selector, field_selector=field_selector)

    def slim_pods_on(self, nodes: Collection[str]) -> dict[str, list[SlimPod]]:
        """Slim records of the pods bound to each node, from the node index (no API request)."""
        store = self.stores["Pod"]
        with self._lock:
            # in key order, as the API lists them (the index is a set)
            return {n: [store.objects[k] for k in sorted(store.by_node.get(n, ()))] for n in nodes}

    async def component_pods(self, controller: Obj) -> list[Obj]:
        """The pods of a DaemonSet whose pods are kept whole, when the cache kept every pod it
        owns; otherwise (a Deployment, a DaemonSet ``Kept.whole_pods_of`` did not recognise from
        its pods, a stale cache) the fallback lists them from the API."""
        meta = controller.get("metadata") or {}
        if not selector_string((controller.get("spec") or {}).get("selector")):
            return []
        if controller.get("kind") == "DaemonSet" and self._serves("Pod"):
            ns, owner = str(meta.get("namespace") or ""), f"DaemonSet/{meta.get('name') or ''}"
            store = self.stores["Pod"]
            with self._lock:
                keys = store.full_by_owner.get((ns, owner), set())
                if len(keys) == store.owned.get((ns, owner), 0):
                    return [store.full[k] for k in sorted(keys)]
        return await self.fallback.component_pods(controller)

    async def slim_pods(
        self, *, field_selector: str = "", nodes: set[str] | None = None, all_nodes: int = 0
    ) -> list[SlimPod]:
        """Slim records of every pod (or of those on ``nodes``), from the store when it serves."""
        if field_selector or not self._serves("Pod"):
            return await self.fallback.slim_pods(field_selector=field_selector, nodes=nodes, all_nodes=all_nodes)
        if nodes is not None:
            return [p for batch in self.slim_pods_on(nodes).values() for p in batch]
        return self.stores["Pod"].values()

    async def slim_pods_by_node(
        self, nodes: Collection[str], *, all_nodes: int = 0, failed: FailedRead | None = None
    ) -> dict[str, list[SlimPod]]:
        """The fast path for node-level checks, from the node index; the fallback's when the cache
        cannot answer (not ready, stale)."""
        if self._serves("Pod"):
            return self.slim_pods_on(nodes)
        return await self.fallback.slim_pods_by_node(nodes, all_nodes=all_nodes, failed=failed)

    async def node_map(self) -> dict[str, Obj]:
        """Every node by name with its marks (``bot.kube.node_map.NodeMap``), built once per change
        of the node store and shared by every question until the next; the fallback's plain map
        when the cache cannot answer (not ready, stale)."""
        if not self._serves("Node"):
            return await self.fallback.node_map()
        store = self.stores["Node"]
        with self._lock:
            memo = self._node_map
            if memo is not None and memo[0] == store.generation:
                return memo[1]
            generation, nodes, marked = store.generation, list(store.ordered().items()), frozenset(store.marked)
        built = NodeMap({name: obj for (_, name), obj in nodes}, marked, self.kept.node_mark)
        with self._lock:
            self._node_map = (generation, built)
        return built

    async def list_nodes(self, *, label_selector: str = "") -> list[Obj]:
        if label_selector or not self._serves("Node"):
            return await self.fallback.list_nodes(label_selector=label_selector)
        return self.stores["Node"].values()

    async def list_namespaces(self) -> list[Obj]:
        if not self._serves("Namespace"):
            return await self.fallback.list_namespaces()
        return self.stores["Namespace"].values()

    async def list_events(self, namespace: str, *, field_selector: str = "") -> list[Obj]:
        return await self.fallback.list_events(namespace, field_selector=field_selector)

    async def list_daemonsets(self, *, label_selector: str = "") -> list[Obj]:
        if not self._serves("DaemonSet"):
            return await self.fallback.list_daemonsets(label_selector=label_selector)
        daemonsets = self.stores["DaemonSet"].values()
        if not label_selector:
            return daemonsets
        # kept whole, so their labels are here: the selector is matched as the API server would
        # (every warm diagnosis asks for the node agent's DaemonSet by label: no request for it)
        try:
            wanted = parse_label_selector(label_selector)
        except SelectorError:
            return await self.fallback.list_daemonsets(label_selector=label_selector)
        return [d for d in daemonsets if labels_match(wanted, labels_of(d))]

    async def list_deployments(self, *, label_selector: str = "") -> list[Obj]:
        if label_selector or not self._serves("Deployment"):
            return await self.fallback.list_deployments(label_selector=label_selector)
        return self.stores["Deployment"].values()

    async def list_replicasets(self, namespace: str, *, label_selector: str = "") -> list[Obj]:
        return await self.fallback.list_replicasets(namespace, label_selector=label_selector)

    async def list_resourcequotas(self, namespace: str) -> list[Obj]:
        if not self._serves("ResourceQuota"):
            return await self.fallback.list_resourcequotas(namespace)
        return [q for q in self.stores["ResourceQuota"].values() if q["metadata"].get("namespace") == namespace]

    async def list_custom(
        self, group: str, version: str, plural: str, namespace: str = "", *, label_selector: str = ""
    ) -> list[Obj]:
        return await self.fallback.list_custom(group, version, plural, namespace, label_selector=label_selector)

    async def get_custom(self, group: str, version: str, plural: str, name: str, namespace: str = "") -> Obj:
        return await self.fallback.get_custom(group, version, plural, name, namespace)

    async def served(self, group: str, version: str) -> bool:
        return await self.fallback.served(group, version)
