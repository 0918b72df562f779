"""Two reference processes for a cold why-pending: the necessary-reads floor and the full download.

``python -m bench.floor_child necessary API_URL PLAN_JSON``: the **necessary-reads floor**. It
downloads and parses exactly the objects the diagnosis needs, with the CLI's own selectors and
page sizes: the pod (one GET), its events (``involvedObject.name=`` in its namespace), every node
(pages of the CLI's ``page_size``), and the pods on the candidate nodes: one
``spec.nodeName=``-selected list per node with the CLI's concurrency where the CLI does that
(few candidate nodes), else every pod in the CLI's slim page size, each page parsed lazily and
only the candidate nodes' pods' few fields built, as the CLI's walk does
(``bot.probes.lazy_pods``). The plan (pod, candidate nodes, page sizes, the per-node rule's
outcome) is worked out by the benchmark from gpubot's own constants and written to
``PLAN_JSON``, so this process imports nothing of gpubot, builds no client and runs no check.
Its reads come one after another, each list page after page: the floor is the cost of those
reads themselves. The CLI overlaps some of them with other work (the
node list with its imports; a list's next page, asked for while it parses the one before), and
the benchmark's report says so beside the ratio.

``python -m bench.floor_child everything API_URL PAGE_SIZE``: every node and every pod, page by
page: what a cache must download before it is warm (the time-to-warm reference).

Both decode each answer with the fastest JSON parser installed (orjson, else the standard
library) over keep-alive HTTP connections (one per worker, HTTP/1.1 spoken by hand as gpubot's
kept reads speak it), with each node's image list cut before parsing and the collector's
thresholds of a gpubot command, as the CLI reads; each prints one JSON line: wall
seconds as seen from inside (interpreter start excluded; the benchmark times the process from
outside too), requests, bytes and the counts read.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

try:
    import orjson

    loads: Any = orjson.loads
    PARSER = "orjson"
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib keeps the floor usable
    loads = json.loads
    PARSER = "json"


def _gpubot_file(name: str) -> Any:
    """``bot/probes/NAME.py``, loaded from its file alone, without importing gpubot (whose package
    start-up the floor must not pay): the CLI cuts each node's image list before parsing a node
    page (``node_images``) and parses the pages of every pod lazily (``lazy_pods``), so the floor
    does too."""
    path = Path(__file__).resolve().parents[1] / "bot" / "probes" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_floor_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


without_images = _gpubot_file("node_images").without_images
lazy_pods = _gpubot_file("lazy_pods")


class Reader:
    """Keep-alive connections to one API server (one per thread) and the counts of what was read.

    HTTP/1.1 spoken by hand, as gpubot's kept reads speak it (bot/probes/kept_gets.py): the request
    in one write, the answer's head split on its lines, the body framed by Content-Length (or
    chunks). ``http.client`` parses every answer's headers with the email package, which cost more
    than the request itself on small per-node lists: a floor must not be slower than the reader it
    is the floor of."""

    def __init__(self, api_url: str) -> None:
        url = urllib.parse.urlsplit(api_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.local = threading.local()
        self.lock = threading.Lock()
        self.requests = self.bytes = 0
        self.conns: list[socket.socket] = []

    def _conn(self) -> socket.socket:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = socket.create_connection((self.host, self.port), timeout=120)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.local.pending = b""
            with self.lock:
                self.conns.append(conn)
        return conn

    def _answer(self, conn: socket.socket) -> bytes:
        """The body of the answer on ``conn`` (what was read past it is kept for the next one)."""
        data = self.local.pending
        while (end := data.find(b"\r\n\r\n")) < 0:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        head, data = data[:end].decode("latin-1").lower(), data[end + 4:]
        if "transfer-encoding: chunked" in head:
            body = bytearray()
            while True:
                while (end := data.find(b"\r\n")) < 0:
                    data += conn.recv(65536)
                size = int(data[:end].split(b";")[0], 16)
                while len(data) < end + 2 + size + 2:
                    data += conn.recv(65536)
                body += data[end + 2 : end + 2 + size]
                data = data[end + 2 + size + 2 :]
                if size == 0:
                    self.local.pending = data
                    return bytes(body)
        length = int(head.split("content-length:")[1].split("\r\n")[0])
        if len(data) < length:
            buf = bytearray(length)
            buf[: len(data)] = data
            view, got = memoryview(buf), len(data)
            while got < length:
                n = conn.recv_into(view[got:])
                if not n:
                    raise ConnectionError("the server closed the connection")
                got += n
            data = bytes(buf)
        self.local.pending = data[length:]
        return data[:length]

    def fetch(self, path: str, query: dict[str, str] | None = None) -> bytes:
        """One GET's body, as it came."""
        conn = self._conn()
        target = f"{path}?{urllib.parse.urlencode(query)}" if query else path
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
                     "Authorization: Bearer floor\r\n\r\n".encode())
        data = self._answer(conn)
        with self.lock:
            self.requests += 1
            self.bytes += len(data)
        return data

    def get(self, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        """One GET, decoded (a node list with its image lists cut first, as the CLI reads it)."""
        data = self.fetch(path, query)
        body = loads(without_images(data) if path == "/api/v1/nodes" else data)
        return body if isinstance(body, dict) else {}

    def pods_on(self, wanted: set[str], page_size: int) -> int:
        """How many pods the wanted nodes hold, from every pod page by page, as the CLI's walk reads
        them (``KubeReader.slim_pods``): each page parsed lazily and the few fields of the wanted
        nodes' pods built (``lazy_pods.skeleton``), or decoded whole where a page does not parse so."""

        def keep(pod: Any) -> Any:
            if lazy_pods.node_of(pod) not in wanted:
                return None
            return pod if isinstance(pod, dict) else lazy_pods.skeleton(pod)

        token, count = "", 0
        while True:
            query = {"limit": str(page_size), **({"continue": token} if token else {})}
            data = self.fetch("/api/v1/pods", query)
            page = lazy_pods.kept_items(data, keep)
            if page is None:
                body = loads(data)
                kept_whole = [keep(p) for p in body.get("items") or []]
                page = kept_whole, str((body.get("metadata") or {}).get("continue") or "")
            kept, token = page
            count += sum(1 for p in kept if p is not None)
            if not token:
                return count

    def walk(self, path: str, page_size: int, **selectors: str) -> Iterator[dict[str, Any]]:
        """Every item of a list at ``path``, page by page (``limit``/``continue``, as the bot reads)."""
        token = ""
        while True:
            query = {**selectors, "limit": str(page_size), **({"continue": token} if token else {})}
            body = self.get(path, query)
            yield from body.get("items") or []
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def necessary(reader: Reader, plan: dict[str, Any]) -> dict[str, Any]:
    """The pod, its events, the nodes, the pods on the candidate nodes (see the module docstring)."""
    ns, pod = plan["namespace"], plan["pod"]
    reader.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    events = sum(
        1
        for _ in reader.walk(
            f"/api/v1/namespaces/{ns}/events", plan["page_size"], fieldSelector=f"involvedObject.name={pod}"
        )
    )
    nodes = sum(1 for _ in reader.walk("/api/v1/nodes", plan["page_size"]))
    candidates: list[str] = plan["candidates"]
    if plan["per_node"]:

        def on(node: str) -> int:
            return sum(1 for _ in reader.walk("/api/v1/pods", plan["page_size"], fieldSelector=f"spec.nodeName={node}"))

        with ThreadPoolExecutor(max_workers=max(1, int(plan["concurrency"]))) as pool:
            pods = sum(pool.map(on, candidates))
    else:
        pods = reader.pods_on(set(candidates), plan["slim_page_size"])
    return {"events": events, "nodes": nodes, "pods": pods, "candidates": len(candidates)}


def everything(reader: Reader, page_size: int) -> dict[str, Any]:
    """Every node and every pod."""
    nodes = sum(1 for _ in reader.walk("/api/v1/nodes", page_size))
    pods = sum(1 for _ in reader.walk("/api/v1/pods", page_size))
    return {"nodes": nodes, "pods": pods}


def main(argv: list[str]) -> None:
    # the collector's thresholds of every gpubot command (bot.cli.tune_gc): at the default ones a
    # process that keeps tens of thousands of parsed objects rescans them again and again, a cost
    # the CLI does not pay and a floor must not either (5,000 nodes: 364 -> 329 ms)
    gc.set_threshold(50_000, 20, 20)
    mode, api_url, arg = argv[:3]
    t0 = time.perf_counter()
    reader = Reader(api_url)
    if mode == "necessary":
        counts = necessary(reader, json.loads(Path(arg).read_text(encoding="utf-8")))
    elif mode == "everything":
        counts = everything(reader, int(arg))
    else:
        raise SystemExit(f"unknown mode {mode!r}: necessary or everything")
    reader.close()
    out = {
        "wall_s": time.perf_counter() - t0,
        **counts,
        "requests": reader.requests,
        "bytes": reader.bytes,
        "parser": PARSER,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
