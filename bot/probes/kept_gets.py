"""Small GETs to the API server over one kept HTTP/1.1 connection per reading thread.

Why: node-level pod lists are made by the hundred (one ``spec.nodeName=`` list per GPU node:
1,000 of them at 10,000 nodes) and each answer holds a few pods, so the request is most of the
read. Through the generated client and urllib3 a request cost ~1.2 ms of CPU; over a kept
``http.client`` connection ~0.55 ms (1,000 such lists from 8 threads, one process, the same
simulated API server), and the cold why-pending spent most of its time beyond the necessary reads
there (bench/bench_why_pending.py). The exchange is written here rather than left to
``http.client``: its request building (a check of every header) and its parse of the answer's
headers (the ``email`` package) were most of what was left: 500 per-node lists at 5,000 nodes
took 160-170 ms against 94-98 ms with the request sent as one write and the head split by hand.
What it speaks: a GET, an answer framed by ``Content-Length``, chunks or the closed connection,
informational answers skipped, ``Connection: close`` honoured. (``bot.probes.http_get`` is another
GET: one request to a metrics exporter on the event loop, with no kept connection and no cluster
credentials; the head of both is read by its ``parse_head``.)

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
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.probes.api_transport import CredentialHeaders, ssl_context
from bot.probes.http_get import parse_head

#: bytes read from the socket at a time, the deadline checked between reads
_CHUNK = 256 * 1024
#: bytes asked of the socket for an answer's head (and a small body with it): under glibc's
#: mmap threshold, so a read does not map and unmap a buffer of its own
_HEAD_READ = 64 * 1024
#: a status line and headers larger than this are no API server's answer
_MAX_HEAD = 64 * 1024


#: how a connection ends under a read: plain TCP's reset or broken pipe, TLS's close or its EOF
_ENDED = (ConnectionResetError, BrokenPipeError, ssl.SSLZeroReturnError, ssl.SSLEOFError)


class _NoAnswer(Exception):
    """The connection ended before the first byte of an answer."""


class _Cut(Exception):
    """The answer ended, or broke HTTP/1.1's framing, before it was whole."""


class _Connection:
    """One kept connection: its socket, the bytes read past the last answer, how many it served."""

    __slots__ = ("answered", "pending", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""
        self.answered = 0

    def wait_until(self, deadline: float) -> None:
        """The socket's next wait is no longer than what is left of the request's time."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole answer within the timeout")
        self.sock.settimeout(left)

    def recv(self, deadline: float) -> bytes:
        """One socket read within the request's time."""
        self.wait_until(deadline)
        return self.sock.recv(_HEAD_READ)


def _header_block(headers: dict[str, str]) -> bytes:
    """The request's header lines; ``ValueError`` (naming no value: they are credentials) for a
    name or value that would break out of its line."""
    lines = []
    for name, value in headers.items():
        text = f"{name}: {value}"
        if any(c in text for c in "\r\n\0") or not name or any(c in name for c in " :\t"):
            raise ValueError(f"header {name.split(':')[0][:40]!r} is not a valid HTTP header")
        lines.append(text + "\r\n")
    return "".join(lines).encode("latin-1")


class KeptGets:
    """GETs of API paths, each thread over its own kept connection."""

    def __init__(self, host_url: str, context: ssl.SSLContext | None, headers: CredentialHeaders) -> None:
        url = urlsplit(host_url)
        self._context = context
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._headers = headers
        default_port = 443 if context is not None else 80
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._authority = host if self._port == default_port else f"{host}:{self._port}"
        #: the last credential headers and their encoded lines (they change when a token rotates)
        self._encoded: tuple[dict[str, str], bytes] = ({}, b"")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[_Connection] = set()
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
        request = self._request(self._prefix + path)
        for attempt in (1, 2):
            conn = self._connection(deadline)
            kept = conn.answered > 0
            try:
                status, reason, body, close = self._exchange(conn, request, deadline)
            except _NoAnswer:
                self._drop(conn)
                if kept and attempt == 1 and time.monotonic() < deadline:
                    continue  # the server closed the idle connection: one fresh try, as urllib3 makes
                raise ConnectionResetError("connection closed without an answer") from None
            except _Cut as exc:
                self._drop(conn)
                raise ConnectionResetError(f"the answer was cut ({exc})") from None
            except BaseException:
                self._drop(conn)
                raise
            conn.answered += 1
            if close:
                self._drop(conn)
            if status >= 400:
                error = ApiException(status=status, reason=reason)
                error.body = body
                raise error
            return body
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, target: str) -> bytes:
        """The whole request, one write: the request line, then the headers the client would send."""
        if not target.startswith("/") or any(c <= " " or c == "\x7f" for c in target):
            raise ValueError("the request path has characters a URL cannot carry")
        headers = self._headers()
        seen, block = self._encoded
        if headers != seen:
            block = _header_block(headers)
            self._encoded = (dict(headers), block)
        return (
            f"GET {target} HTTP/1.1\r\nHost: {self._authority}\r\nAccept-Encoding: identity\r\n"
            "Accept: application/json\r\n"
        ).encode("latin-1") + block + b"\r\n"

    def _exchange(self, conn: _Connection, request: bytes, deadline: float) -> tuple[int, str, bytes, bool]:
        """Send ``request``, read its answer: (status, reason, body, whether the connection ends)."""
        conn.wait_until(deadline)
        try:
            conn.sock.sendall(request)
        except _ENDED:
            raise _NoAnswer from None
        buffer, conn.pending = conn.pending, b""
        while True:  # informational answers (1xx) come before the one that counts
            end = buffer.find(b"\r\n\r\n")
            while end < 0:
                if len(buffer) > _MAX_HEAD:
                    raise _Cut("headers too long")
                try:
                    chunk = conn.recv(deadline)
                except _ENDED:
                    raise (_Cut("reset") if buffer else _NoAnswer) from None
                if not chunk:
                    raise _Cut("closed in the headers") if buffer else _NoAnswer
                buffer += chunk
                end = buffer.find(b"\r\n\r\n", max(len(buffer) - len(chunk) - 3, 0))
            head, buffer = buffer[:end], buffer[end + 4:]
            parsed = parse_head(head)
            if parsed is None:
                raise _Cut("not an HTTP answer")
            status, reason, headers = parsed
            if not 100 <= status < 200:
                break
        close = headers.get("connection", "").lower() == "close" or (
            head.startswith(b"HTTP/1.0") and headers.get("connection", "").lower() != "keep-alive"
        )
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body, conn.pending = _chunked(conn, buffer, deadline)
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise _Cut("bad Content-Length") from None
            if length < 0:
                raise _Cut("bad Content-Length")
            body, conn.pending = _exactly(conn, buffer, length, deadline)
        else:  # framed by the end of the connection
            parts = [buffer]
            with contextlib.suppress(ssl.SSLZeroReturnError, ssl.SSLEOFError):  # TLS's own way to end
                while chunk := conn.recv(deadline):
                    parts.append(chunk)
            body, close = b"".join(parts), True
        return status, reason, body, close

    def _connection(self, deadline: float) -> _Connection:
        """This thread's connection: the kept one, else a new one (TLS where the server is https)."""
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole answer within the timeout")
        sock = socket.create_connection((self._host, self._port), timeout=left)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self._host)
        except BaseException:
            sock.close()
            raise
        conn = _Connection(sock)
        with self._lock:
            if self._closed:
                sock.close()
                raise ConnectionResetError("the reader is closed")
            self._open.add(conn)
        self._local.conn = conn
        return conn

    def _drop(self, conn: _Connection) -> None:
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._open.discard(conn)
        with contextlib.suppress(OSError):
            conn.sock.close()

    def close(self) -> None:
        """Close every thread's connection; later GETs fail (the reader is done)."""
        with self._lock:
            self._closed = True
            conns, self._open = list(self._open), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.sock.close()


def _exactly(conn: _Connection, buffer: bytes, length: int, deadline: float) -> tuple[bytes, bytes]:
    """A body of ``length`` bytes (what was read past it is kept for the next answer)."""
    if len(buffer) >= length:
        return buffer[:length], buffer[length:]
    body = bytearray(length)
    body[: len(buffer)] = buffer
    view, got = memoryview(body), len(buffer)
    while got < length:
        conn.wait_until(deadline)
        try:
            n = conn.sock.recv_into(view[got:], min(length - got, 4 * _CHUNK))
        except _ENDED:
            raise _Cut("reset in the body") from None
        if not n:
            raise _Cut(f"closed after {got} of {length} bytes")
        got += n
    view.release()
    return bytes(body), b""


def _chunked(conn: _Connection, buffer: bytes, deadline: float) -> tuple[bytes, bytes]:
    """A body in chunks (``Transfer-Encoding: chunked``), and what was read past its end."""
    body = bytearray()
    data = bytearray(buffer)
    at = 0

    def need(n: int) -> None:
        while len(data) - at < n:
            try:
                chunk = conn.recv(deadline)
            except _ENDED:
                raise _Cut("reset in the body") from None
            if not chunk:
                raise _Cut("closed in a chunked body")
            data.extend(chunk)

    def line() -> bytes:
        nonlocal at
        while (end := data.find(b"\r\n", at)) < 0:
            if len(data) - at > _MAX_HEAD:
                raise _Cut("a chunk line too long")
            need(len(data) - at + 1)
        text, at = bytes(data[at:end]), end + 2
        return text

    while True:
        try:
            size = int(line().split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _Cut("bad chunk size") from None
        if size < 0:
            raise _Cut("bad chunk size")
        if size == 0:
            while line():  # trailers, up to the empty line that ends the answer
                pass
            return bytes(body), bytes(data[at:])
        need(size + 2)
        body += data[at : at + size]
        at += size + 2
        if at > _CHUNK:  # what was consumed is dropped now and then, not at every chunk
            del data[:at]
            at = 0


__all__ = ["KeptGets"]
