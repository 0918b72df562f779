"""How an API read failed, in the terms a person acts on: the one classification of client errors.

The official client raises urllib3 errors (wrapped in ``MaxRetryError`` with retries off), an
``ApiException`` with status 0 for TLS failures, or an ``ApiException`` carrying the HTTP status.
``classify`` turns each into a ``ReadErrorKind`` and a short detail ("connection refused",
"certificate verify failed", "500 Internal Server Error"), so the report can tell "the server is
not there" from "it said no" from "it broke", and never call any of them "not found". Nothing
here may put a token, a header or a URL's credentials into a message.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import urllib3
from kubernetes.client.exceptions import ApiException

from bot.errors import ReadErrorKind

#: reasons the HTTP status lines use, for a detail that reads without a status table
_STATUS_TEXT = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    410: "Gone",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def safe_url(url: str) -> str:
    """``url`` without user, password, query or fragment: what a report may show of a server."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: urllib3's ``reason``, then ``__cause__``/``__context__``."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop(0)
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        todo += [getattr(cur, "reason", None) if isinstance(getattr(cur, "reason", None), BaseException) else None,
                 cur.__cause__, cur.__context__]
        todo += [a for a in getattr(cur, "args", ()) if isinstance(a, BaseException)]


def _tls_detail(exc: BaseException) -> str:
    for cur in _chain(exc):
        if isinstance(cur, ssl.SSLCertVerificationError):
            return f"TLS: {getattr(cur, 'verify_message', '') or 'certificate verify failed'}"
        if isinstance(cur, ssl.SSLError) and getattr(cur, "reason", None):
            return f"TLS: {str(cur.reason).lower().replace('_', ' ')}"
    return "TLS handshake failed"


def _status_reason(exc: ApiException) -> str:
    """The Status message the server sent (``nodes is forbidden: User "x" cannot list …``)."""
    try:
        body = json.loads(exc.body or "{}")
        return str(body.get("message") or "")[:300] if isinstance(body, dict) else ""
    except (ValueError, TypeError):
        return ""


def status_detail(status: int, message: str = "") -> str:
    """``500 Internal Server Error`` (and the server's message when it said one)."""
    head = f"{status} {_STATUS_TEXT.get(status, 'error')}"
    return f"{head}: {message}" if message else head


def classify(exc: BaseException, *, timeout_s: float | None = None) -> tuple[ReadErrorKind, str, int | None]:
    """(kind, short detail, HTTP status or None) of a client error raised by one request."""
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        if status == 0:  # the client reports an SSLError as status 0 with the error in the reason
            text = str(exc.reason or "")
            if "SSL" in text or "TLS" in text or "certificate" in text.lower():
                return "tls", _tls_detail(exc), None
            return "unreachable", text[:200] or "no answer", None
        message = _status_reason(exc)
        if status == 401:
            return "unauthorized", "401 Unauthorized: the server rejected the credentials", status
        if status == 403:
            return "forbidden", message or status_detail(403), status
        if status == 404:
            return "not_found", status_detail(404), status
        return "failed", status_detail(status, message), status
    chain = list(_chain(exc))
    if any(isinstance(c, ssl.SSLError | urllib3.exceptions.SSLError) for c in chain):
        return "tls", _tls_detail(exc), None
    # urllib3's NewConnectionError is a ConnectTimeoutError too: the cause decides
    if any(isinstance(c, urllib3.exceptions.NameResolutionError | socket.gaierror) for c in chain):
        return "unreachable", "host name not resolved", None
    if any(isinstance(c, ConnectionRefusedError) for c in chain):
        return "unreachable", "connection refused", None
    if any(isinstance(c, ConnectionResetError | BrokenPipeError) for c in chain):
        return "unreachable", "connection reset", None
    if any(isinstance(c, urllib3.exceptions.ConnectTimeoutError) for c in chain):
        return "unreachable", "connect timed out", None
    if any(isinstance(c, urllib3.exceptions.ReadTimeoutError | socket.timeout | TimeoutError) for c in chain):
        waited = f" within {timeout_s:.3g} s" if timeout_s else ""
        return "timeout", f"connected, but no answer{waited}", None
    if any(isinstance(c, urllib3.exceptions.ProtocolError) for c in chain):
        return "unreachable", "connection closed without an answer", None
    if any(isinstance(c, urllib3.exceptions.HTTPError | OSError) for c in chain):
        return "unreachable", f"connection failed ({type(exc).__name__})", None
    return "failed", type(exc).__name__, None
