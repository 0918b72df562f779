"""The floor of a cold why-pending: a fresh process that only downloads and parses the cluster.

``python -m bench.floor_child API_URL PAGE_SIZE``: lists every pod and every node from the
simulator, page by page (``limit``/``continue``, as the bot does) over one keep-alive HTTP
connection, and decodes each page with the fastest JSON parser installed (orjson, else the
standard library). It imports nothing of gpubot, builds no client and runs no check, so no cold
diagnosis that reads every pod can be faster. Prints one JSON line: wall seconds of the whole
process as seen from inside (interpreter start excluded; the benchmark times the process from
outside too), pods, nodes and bytes read.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
import urllib.parse
from typing import Any

try:
    import orjson

    loads: Any = orjson.loads
    PARSER = "orjson"
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib keeps the floor usable
    loads = json.loads
    PARSER = "json"


def walk(conn: http.client.HTTPConnection, path: str, page_size: int) -> tuple[int, int]:
    """Every item of a list at ``path``, page by page; returns (items, bytes)."""
    items = size = 0
    token = ""
    while True:
        query = {"limit": str(page_size), **({"continue": token} if token else {})}
        conn.request("GET", f"{path}?{urllib.parse.urlencode(query)}", headers={"Authorization": "Bearer floor"})
        data = conn.getresponse().read()
        size += len(data)
        body = loads(data)
        items += len(body.get("items") or [])
        token = str((body.get("metadata") or {}).get("continue") or "")
        if not token:
            return items, size


def main(api_url: str, page_size: int) -> None:
    t0 = time.perf_counter()
    url = urllib.parse.urlsplit(api_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80, timeout=60)
    nodes, node_bytes = walk(conn, "/api/v1/nodes", page_size)
    pods, pod_bytes = walk(conn, "/api/v1/pods", page_size)
    conn.close()
    out = {
        "wall_s": time.perf_counter() - t0,
        "pods": pods,
        "nodes": nodes,
        "bytes": node_bytes + pod_bytes,
        "parser": PARSER,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
