"""One bounded plain-HTTP GET on asyncio streams, for a metrics endpoint on a pod IP.

Why not aiohttp: the one GET a diagnosis makes (dcgm-exporter's ``/metrics``) would import
aiohttp, whose connector builds its TLS contexts at import time: about 0.3 s of a cold
``gpubot why-pending`` whose whole start-up budget is 0.35 s (bench/bench_why_pending.py,
"imports only s"). The exporter speaks plain HTTP/1.1 on the pod network; what it needs is a
request line, the status, and a body framed by ``Content-Length``, chunks or the closed socket.
"""

from __future__ import annotations

import asyncio
import contextlib

#: a status line and headers larger than this are not a metrics endpoint's
_MAX_HEAD = 64 * 1024


class HttpError(Exception):
    """The server answered with a status other than 2xx, or broke HTTP/1.1's framing."""


def parse_head(head: bytes) -> tuple[int, str, dict[str, str]] | None:
    """(status, reason, headers in lower case) of an HTTP/1.1 answer's head (its status line and
    header lines); None when it is not one. Shared with the exec stream's upgrade (``websocket``)."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _read_chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    body = bytearray()
    while len(body) < limit:
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError:
            raise HttpError("a chunk size line too long") from None
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise HttpError(f"bad chunk size {line[:40]!r}") from None
        if size < 0:
            raise HttpError(f"bad chunk size {line[:40]!r}")
        if size == 0:
            break
        body += await reader.readexactly(min(size, limit - len(body)))  # never more than the limit
        if len(body) >= limit:
            break
        await reader.readexactly(2)
    return bytes(body[:limit])


async def _read_to_close(reader: asyncio.StreamReader, limit: int) -> bytes:
    body = bytearray()
    while len(body) < limit and (block := await reader.read(limit - len(body))):
        body += block
    return bytes(body)


async def get_text(host: str, port: int, path: str, *, limit: int) -> str:
    """The body of ``GET http://host:port/path`` as text (at most ``limit`` bytes); ``OSError`` when
    the connection fails, ``HttpError`` for a status other than 2xx or a malformed answer. The caller
    bounds the time (``asyncio.timeout``)."""
    reader, writer = await asyncio.open_connection(host, port, limit=_MAX_HEAD)
    try:
        request = (f"GET {path} HTTP/1.1\r\nHost: {_authority(host, port)}\r\nAccept: text/plain\r\n"
                   "Connection: close\r\nUser-Agent: gpubot\r\n\r\n")
        writer.write(request.encode("ascii"))
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise HttpError("the answer ended before its headers") from exc
        parsed = parse_head(head)
        if parsed is None:
            first = head.partition(b"\r\n")[0][:60].decode("latin-1")
            raise HttpError(f"not an HTTP answer: {first!r}")
        status, reason, headers = parsed
        if not 200 <= status < 300:
            raise HttpError(f"HTTP {status} {reason}".strip())
        try:
            if "chunked" in headers.get("transfer-encoding", "").lower():
                body = await _read_chunked(reader, limit)
            elif "content-length" in headers:
                body = await reader.readexactly(min(int(headers["content-length"]), limit))
            else:
                body = await _read_to_close(reader, limit)
        except asyncio.IncompleteReadError as exc:
            raise HttpError("the answer ended in the middle of its body") from exc
        except ValueError as exc:
            raise HttpError("bad Content-Length") from exc
        return body.decode("utf-8", "replace")
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
