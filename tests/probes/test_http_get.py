"""The metrics GET against raw servers that answer each way HTTP/1.1 frames a body, and badly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from bot.probes.http_get import HttpError, get_text


@asynccontextmanager
async def answering(answer: bytes, *, seen: Callable[[bytes], None] = lambda _: None) -> AsyncIterator[int]:
    """A server on a free port that reads the request head, writes ``answer`` and closes."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen(await reader.readuntil(b"\r\n\r\n"))
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_content_length_body_and_the_request_it_answers() -> None:
    heads: list[bytes] = []
    body = b'DCGM_FI_DEV_FB_USED{gpu="0"} 12\n'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    async with answering(answer, seen=heads.append) as port:
        assert await get_text("127.0.0.1", port, "/metrics", limit=1 << 20) == body.decode()
    assert heads[0].startswith(b"GET /metrics HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{port}\r\n".encode() in heads[0]


async def test_a_chunked_body_with_an_extension() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    async with answering(answer) as port:
        assert await get_text("127.0.0.1", port, "/metrics", limit=1 << 20) == "hello world"


async def test_a_body_ended_by_the_closed_connection_is_read_whole_up_to_the_limit() -> None:
    body = b"x" * 300_000  # more than one read returns
    async with answering(b"HTTP/1.0 200 OK\r\n\r\n" + body) as port:
        assert len(await get_text("127.0.0.1", port, "/metrics", limit=1 << 20)) == len(body)
    async with answering(b"HTTP/1.0 200 OK\r\n\r\n" + body) as port:
        assert len(await get_text("127.0.0.1", port, "/metrics", limit=1000)) == 1000


@pytest.mark.parametrize(("answer", "said"), [
    (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", "HTTP 503 Service Unavailable"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", "ended in the middle of its body"),
    (b"HTTP/1.1 200 OK\r\nContent-Le", "ended before its headers"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
])
async def test_a_bad_answer_is_an_http_error_that_says_what_was_wrong(answer: bytes, said: str) -> None:
    async with answering(answer) as port:
        with pytest.raises(HttpError, match=said):
            await get_text("127.0.0.1", port, "/metrics", limit=1 << 20)


async def test_nothing_listening_is_an_os_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(OSError):
        await get_text("127.0.0.1", port, "/metrics", limit=100)


async def test_a_chunk_larger_than_the_limit_is_read_only_up_to_it() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n" + b"y" * 0x100000 + b"\r\n0\r\n\r\n"
    async with answering(answer) as port:
        assert await get_text("127.0.0.1", port, "/metrics", limit=1000) == "y" * 1000
