"""The exec stream's own WebSocket client against servers that speak the protocol on a socket:
fragments, pings, long frames, refused and forged upgrades, an HTTP CONNECT proxy, a cut stream.

The end-to-end paths (the simulator's exec endpoint through ``PodExec`` and the actuator) are in
tests/scenarios/test_node_agent.py and tests/actions; these cover what that server never sends.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from bot.probes.websocket import (
    BINARY,
    CLOSE,
    PING,
    PONG,
    TEXT,
    Endpoint,
    HandshakeError,
    ProtocolError,
    client_frame,
    connect,
)

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def server_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """A frame as a server sends it: never masked."""
    first = (0x80 if fin else 0) | opcode
    size = len(payload)
    if size < 126:
        return struct.pack("!BB", first, size) + payload
    if size < 1 << 16:
        return struct.pack("!BBH", first, 126, size) + payload
    return struct.pack("!BBQ", first, 127, size) + payload


async def read_client_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Read one masked client frame and unmask it (the server's side of the rule)."""
    first, second = await reader.readexactly(2)
    assert second & 0x80, "a client frame must be masked"
    size = second & 0x7F
    if size == 126:
        (size,) = struct.unpack("!H", await reader.readexactly(2))
    elif size == 127:
        (size,) = struct.unpack("!Q", await reader.readexactly(8))
    key = await reader.readexactly(4)
    data = await reader.readexactly(size)
    return first & 0x0F, bytes(b ^ key[i % 4] for i, b in enumerate(data))


async def handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, accept: str | None = None
) -> dict[str, str]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    headers[":request"] = lines[0]
    key = headers["sec-websocket-key"]
    good = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
    writer.write(
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept or good}\r\n"
            f"Sec-WebSocket-Protocol: {headers['sec-websocket-protocol']}\r\n\r\n"
        ).encode()
    )
    return headers


@asynccontextmanager
async def serving(script: Script) -> AsyncIterator[str]:
    """A one-script TCP server on loopback; yields its http:// base URL and, on leaving, waits
    for every script to finish (what they saw is asserted after)."""
    running: list[asyncio.Task[None]] = []

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await script(reader, writer)
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(run(reader, writer))
        running.append(task)
        await task

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        async with asyncio.timeout(5):
            await asyncio.gather(*running, return_exceptions=True)
        server.close()
        await server.wait_closed()


async def test_fragments_are_joined_pings_answered_and_long_frames_read() -> None:
    seen: dict[str, object] = {}
    big = bytes([1]) + b"x" * 70_000  # an 8-byte length

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen["headers"] = await handshake(reader, writer)
        writer.write(server_frame(BINARY, b"\x01hel", fin=False))
        writer.write(server_frame(PING, b"are you there"))
        writer.write(server_frame(0x0, b"lo"))
        writer.write(server_frame(BINARY, big))
        writer.write(server_frame(PONG, b""))
        writer.write(server_frame(TEXT, b"\x02text"))
        seen["pong"] = await read_client_frame(reader)
        writer.write(server_frame(CLOSE, struct.pack("!H", 1000)))
        seen["close"] = await read_client_frame(reader)

    async with serving(script) as base:
        endpoint = Endpoint(f"{base}/api/v1/x/exec")
        ws = await connect(endpoint, "command=ls&stdout=true", {"Authorization": "Bearer t"}, "v4.channel.k8s.io")
        got = []
        while (message := await ws.receive()) is not None:
            got.append(message)
        await ws.close()
    assert got == [(BINARY, b"\x01hello"), (BINARY, big), (TEXT, b"\x02text")]
    assert seen["pong"] == (PONG, b"are you there")
    assert seen["close"] == (CLOSE, struct.pack("!H", 1000))
    headers = seen["headers"]
    assert isinstance(headers, dict)
    assert headers[":request"] == "GET /api/v1/x/exec?command=ls&stdout=true HTTP/1.1"
    assert headers["authorization"] == "Bearer t"
    assert headers["sec-websocket-protocol"] == "v4.channel.k8s.io"
    assert ws.protocol == "v4.channel.k8s.io"


async def test_a_refused_upgrade_is_a_handshake_error_with_the_status_and_body() -> None:
    body = b'{"kind":"Status","code":403,"message":"forbidden"}'

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n")
        writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    async with serving(script) as base:
        with pytest.raises(HandshakeError) as caught:
            await connect(Endpoint(f"{base}/x"), "", {}, "v4.channel.k8s.io")
    assert caught.value.status == 403
    assert caught.value.body == body


async def test_a_forged_accept_key_or_a_non_http_answer_is_refused() -> None:
    async def forged(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer, accept="bm90IHRoZSByaWdodCBrZXk=")

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")

    for script in (forged, garbage):
        async with serving(script) as base:
            with pytest.raises(ProtocolError):
                await connect(Endpoint(f"{base}/x"), "", {}, "v4.channel.k8s.io")


async def test_a_stream_cut_mid_frame_is_a_protocol_error_and_one_cut_between_frames_ends_it() -> None:
    async def mid_frame(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer)
        writer.write(server_frame(BINARY, b"\x01" + b"y" * 50)[:20])

    async def between(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer)
        writer.write(server_frame(BINARY, b"\x01partial"))

    async with serving(mid_frame) as base:
        ws = await connect(Endpoint(f"{base}/x"), "", {}, "v4.channel.k8s.io")
        with pytest.raises(ProtocolError):
            await ws.receive()
        await ws.close()
    async with serving(between) as base:
        ws = await connect(Endpoint(f"{base}/x"), "", {}, "v4.channel.k8s.io")
        assert await ws.receive() == (BINARY, b"\x01partial")
        assert await ws.receive() is None
        await ws.close()


async def test_the_connection_goes_through_an_http_connect_proxy_with_its_credentials() -> None:
    asked: list[str] = []

    async def target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer)
        writer.write(server_frame(BINARY, b"\x01via proxy"))
        writer.write(server_frame(CLOSE, b""))
        await read_client_frame(reader)

    async with serving(target) as base:
        port = int(base.rsplit(":", 1)[1])

        async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            asked.append(head)
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                while data := await src.read(65536):
                    dst.write(data)
                dst.close()

            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        async with serving(proxy) as proxy_base:
            proxy_url = proxy_base.replace("http://", "http://user:secret@")
            ws = await connect(Endpoint(f"{base}/x", proxy=proxy_url), "", {}, "v4.channel.k8s.io")
            assert await ws.receive() == (BINARY, b"\x01via proxy")
            assert await ws.receive() is None
            await ws.close()
    assert asked and asked[0].startswith(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n")
    assert "Proxy-Authorization: Basic " + base64.b64encode(b"user:secret").decode() in asked[0]


def test_client_frames_are_masked_and_carry_the_right_length() -> None:
    for size in (0, 5, 125, 126, 65535, 65536):
        frame = client_frame(BINARY, b"z" * size)
        assert frame[0] == 0x80 | BINARY
        assert frame[1] & 0x80
        header = 2 + (2 if 126 <= size < 65536 else 8 if size >= 65536 else 0)
        assert len(frame) == header + 4 + size
        key = frame[header : header + 4]
        assert bytes(b ^ key[i % 4] for i, b in enumerate(frame[header + 4 :])) == b"z" * size
