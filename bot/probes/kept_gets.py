"""Small GETs to the API server over one kept HTTP/1.1 connection per reading thread.

Why: node-level pod lists are made by the hundred (one ``spec.nodeName=`` list per GPU node:
1,000 of them at 10,000 nodes) and each answer holds a few pods, so the request is most of the
read. Through the generated client and urllib3 a request cost ~1.2 ms of CPU; over a kept
``http.client`` connection ~0.55 ms (1,000 such lists from 8 threads, one process, the same
simulated API server), and the cold why-pending spent most of its time beyond the necessary reads
there (bench/bench_why_pending.py). (``bot.probes.http_get`` is another GET: one request to a
metrics exporter on the event loop, with no kept connection and no cluster credentials.)

What it covers: ``http`` and ``https`` servers with the client's CA, client certificate and
verification settings (``bot.probes.api_transport``), its default headers and credentials, and
a server URL with a path. What it does not, so ``KeptGets.for_client`` gives None and the read
goes through the client: an HTTP proxy, a TLS server name that is not the URL's host, and an
impersonating client (its pool adds those headers).

Its errors are the ones the client raises, so ``bot.probes.read_errors.classify`` reads both
alike: an answer of 400 or more is an ``ApiException`` with the status and body; a failed
connection is the ``OSError`` or ``ssl.SSLError`` it raised; an answer cut short is a
``ConnectionResetError``; no answer within the timeout a ``TimeoutError``. The timeout bounds the
wait for the answer and the whole body (checked between socket reads); like urllib3's, it bounds
the header lines read by read only. A kept connection the server closed while it was idle is
opened again once.
"""

from __future__ import annotations

import contextlib
import http.client
import ssl
import threading
import time
from urllib.parse import urlsplit

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.probes.api_transport import CredentialHeaders, ssl_context

#: bytes read from the socket at a time, the deadline checked between reads
_CHUNK = 256 * 1024


class KeptGets:
    """GETs of API paths, each thread over its own kept connection."""

    def __init__(self, host_url: str, context: ssl.SSLContext | None, headers: CredentialHeaders) -> None:
        url = urlsplit(host_url)
        self._context = context
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._headers = headers
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()
        self._closed = False

    @classmethod
    def for_client(cls, api_client: client.ApiClient) -> KeptGets | None:
        """For what ``api_client`` reaches directly; None where the client must be used (see the module)."""
        cfg = api_client.configuration
        scheme = urlsplit(str(cfg.host)).scheme
        if scheme not in ("http", "https") or cfg.proxy or getattr(cfg, "tls_server_name", None):
            return None
        if type(api_client.rest_client.pool_manager) is not urllib3.PoolManager:
            return None  # an impersonating (or otherwise wrapped) pool: its headers are the client's
        return cls(str(cfg.host), ssl_context(cfg), CredentialHeaders(api_client))

    def get(self, path: str, timeout: float) -> bytes:
        """The body of ``GET path`` (``path`` with its query, under the server URL's own path)."""
        deadline = time.monotonic() + timeout
        for attempt in (1, 2):
            conn, kept = self._connection(timeout)
            try:
                status, reason, body = self._exchange(conn, self._prefix + path, deadline)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop(conn)
                if kept and attempt == 1 and time.monotonic() < deadline:
                    continue  # the server closed the idle connection: one fresh try, as urllib3 makes
                if isinstance(exc, ConnectionResetError):
                    raise
                raise ConnectionResetError("connection closed without an answer") from None
            except http.client.HTTPException as exc:  # a malformed or cut answer
                self._drop(conn)
                raise ConnectionResetError(f"the answer was cut ({type(exc).__name__})") from None
            except BaseException:
                self._drop(conn)
                raise
            if status >= 400:
                error = ApiException(status=status, reason=reason)
                error.body = body
                raise error
            return body
        raise AssertionError("unreachable")  # pragma: no cover

    def _exchange(self, conn: http.client.HTTPConnection, target: str, deadline: float) -> tuple[int, str, bytes]:
        conn.request("GET", target, headers={"Accept": "application/json", **self._headers()})
        self._time_left(conn, deadline)
        response = conn.getresponse()
        parts = []
        while chunk := response.read1(_CHUNK):  # one socket read at most: the deadline is checked between
            parts.append(chunk)
            self._time_left(conn, deadline)
        parts.append(response.read())  # nothing is left: this marks the answer read, the connection free again
        if response.will_close:
            self._drop(conn)
        return response.status, response.reason, b"".join(parts)

    @staticmethod
    def _time_left(conn: http.client.HTTPConnection, deadline: float) -> None:
        """The socket waits no longer than what is left of the request's timeout."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole answer within the timeout")
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection (kept: it served an earlier request), the socket's waits set to ``timeout``."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None:
            conn.sock.settimeout(timeout)
            return conn, True
        if self._context is not None:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        with self._lock:
            if self._closed:
                raise ConnectionResetError("the reader is closed")
            self._open.add(conn)
        self._local.conn = conn
        return conn, False

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._open.discard(conn)
        with contextlib.suppress(OSError):
            conn.close()

    def close(self) -> None:
        """Close every thread's connection; later GETs fail (the reader is done)."""
        with self._lock:
            self._closed = True
            conns, self._open = list(self._open), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()


__all__ = ["KeptGets"]
