"""The client half of RFC 6455 that the API server's exec stream needs, on asyncio streams.

Why not a WebSocket library: through the node agent, node-status opens one exec per node, and in
a fleet-wide run the client's per-connection cost is the bot's CPU (bench/bench_node_status.py).
aiohttp's session, connector and response machinery cost about as much per exec as parsing the
node's whole nvidia-smi output. The exec stream uses little of the protocol: one HTTP/1.1
upgrade with a subprotocol, server frames that are never masked (binary, text, continuation, ping,
pong, close), and from our side only a masked pong and a close. TLS (with SNI) and an HTTP
``CONNECT`` proxy are asyncio's and a dozen lines here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import ssl
import struct
from dataclasses import dataclass
from urllib.parse import urlsplit

from bot.probes.http_get import parse_head

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
#: a handshake answer larger than this is not an API server's
_MAX_HEAD = 64 * 1024
#: how long a close waits for the connection to be gone before dropping it
_CLOSE_WAIT_S = 1.0


class HandshakeError(Exception):
    """The server answered the upgrade with an HTTP status instead of ``101``."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


class ProtocolError(Exception):
    """The stream broke the framing rules (or was cut in the middle of a frame)."""


@dataclass(frozen=True)
class Endpoint:
    """Where to connect: the URL's host and port, TLS, and an optional ``CONNECT`` proxy."""

    url: str
    ssl: ssl.SSLContext | None = None
    server_hostname: str | None = None
    proxy: str | None = None


def _mask(payload: bytes, key: bytes) -> bytes:
    """XOR with the 4-byte key, as whole integers (a byte loop is slow for a long close reason)."""
    if not payload:
        return payload
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    as_int = int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")
    return as_int.to_bytes(len(payload), "big")


def client_frame(opcode: int, payload: bytes = b"") -> bytes:
    """One final, masked frame (a client must mask every frame it sends)."""
    key = os.urandom(4)
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    return head + key + _mask(payload, key)


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """(status, headers in lower case, body) of the HTTP answer to the upgrade."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise ProtocolError("handshake answer too large") from None
    except asyncio.IncompleteReadError:
        raise ProtocolError("connection closed during the handshake") from None
    parsed = parse_head(head)
    if parsed is None:
        raise ProtocolError("not an HTTP answer")
    status, _, headers = parsed
    body = b""
    if status != 101:
        length = headers.get("content-length", "")
        size = min(int(length), _MAX_HEAD) if length.isdigit() else 0
        try:
            body = await reader.readexactly(size) if size else b""
        except asyncio.IncompleteReadError as exc:
            body = exc.partial
    return status, headers, body


async def _open_stream(endpoint: Endpoint) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
    """A connected (and, for https, TLS-wrapped) stream to the URL's host; the Host header value."""
    target = urlsplit(endpoint.url)
    secure = target.scheme in ("https", "wss")
    host = target.hostname or ""
    port = target.port or (443 if secure else 80)
    host_header = target.netloc.rpartition("@")[2]
    context = endpoint.ssl if secure else None
    if secure and context is None:
        context = ssl.create_default_context()
    if not endpoint.proxy:
        reader, writer = await asyncio.open_connection(
            host,
            port,
            ssl=context,
            server_hostname=(endpoint.server_hostname or host) if context else None,
            limit=_MAX_HEAD,
        )
        return reader, writer, host_header
    proxy = urlsplit(endpoint.proxy)
    reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port or 80, limit=_MAX_HEAD)
    lines = [f"CONNECT {host}:{port} HTTP/1.1", f"Host: {host}:{port}"]
    if proxy.username:
        secret = f"{proxy.username}:{proxy.password or ''}".encode()
        lines.append("Proxy-Authorization: Basic " + base64.b64encode(secret).decode())
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    status, _, _ = await _read_head(reader)
    if status != 200:
        writer.close()
        raise HandshakeError(status, b"")
    if context is not None:
        await writer.start_tls(context, server_hostname=endpoint.server_hostname or host)
    return reader, writer, host_header


class WebSocket:
    """An open client connection: ``receive`` the server's data frames, then ``close``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, protocol: str) -> None:
        self._reader = reader
        self._writer = writer
        self.protocol = protocol
        self.closed = False

    async def _frame(self) -> tuple[bool, int, bytes] | None:
        """(final, opcode, payload) of the next frame; None when the stream ends before one."""
        try:
            first, second = await self._reader.readexactly(2)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise ProtocolError("stream cut in the middle of a frame") from None
        try:
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self._reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self._reader.readexactly(8))
            key = await self._reader.readexactly(4) if second & 0x80 else b""
            payload = await self._reader.readexactly(size) if size else b""
        except asyncio.IncompleteReadError:
            raise ProtocolError("stream cut in the middle of a frame") from None
        return bool(first & 0x80), first & 0x0F, _mask(payload, key) if key else payload

    async def receive(self) -> tuple[int, bytes] | None:
        """The next whole data message as (opcode, payload); None once the server has closed
        (with a close frame, or by ending the stream between messages).

        Pings are answered, pongs skipped, fragments joined."""
        opcode, parts = -1, bytearray()
        while not self.closed:
            frame = await self._frame()
            if frame is None:
                if opcode != -1:
                    raise ProtocolError("stream ended in the middle of a fragmented message")
                self.closed = True
                return None
            fin, code, payload = frame
            if code == CLOSE:
                self.closed = True
                self._send(CLOSE, payload[:2])
                return None
            if code == PING:
                self._send(PONG, payload)
                continue
            if code == PONG:
                continue
            if code != CONTINUATION:
                opcode, parts = code, bytearray()
            elif opcode == -1:
                raise ProtocolError("continuation frame without a first fragment")
            parts += payload
            if fin:
                return opcode, bytes(parts)
        return None

    def _send(self, opcode: int, payload: bytes = b"") -> None:
        if not self._writer.is_closing():
            self._writer.write(client_frame(opcode, payload))

    async def close(self) -> None:
        """Say goodbye (a normal close) if the server has not, and drop the connection."""
        if not self.closed:
            self.closed = True
            self._send(CLOSE, struct.pack("!H", 1000))
        self._writer.close()
        try:
            # a TLS close waits for the peer's close_notify (asyncio allows it 30 s): a hung API
            # server must not hold the caller past its deadline
            async with asyncio.timeout(_CLOSE_WAIT_S):
                with contextlib.suppress(OSError, ssl.SSLError):
                    await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()


async def connect(endpoint: Endpoint, query: str, headers: dict[str, str], protocol: str) -> WebSocket:
    """Open the connection and upgrade it (``query``: URL-encoded parameters); ``HandshakeError``
    with the server's status otherwise."""
    reader, writer, host_header = await _open_stream(endpoint)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        target = urlsplit(endpoint.url)
        path = (target.path or "/") + ("?" + query if query else "")
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host_header}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            f"Sec-WebSocket-Protocol: {protocol}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, answer, body = await _read_head(reader)
        if status != 101:
            raise HandshakeError(status, body)
        expected = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()  # noqa: S324 - RFC 6455
        if answer.get("sec-websocket-accept") != expected:
            raise ProtocolError("the server's Sec-WebSocket-Accept does not match the key")
        return WebSocket(reader, writer, answer.get("sec-websocket-protocol", ""))
    except BaseException:
        writer.close()
        raise
