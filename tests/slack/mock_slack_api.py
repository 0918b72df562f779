"""A local Slack: the Web API, upload URLs, ``response_url`` and a Socket Mode WebSocket.

One aiohttp server on 127.0.0.1 port 0 that records every request it gets (method, token, body,
arrival time), answers ``ok`` like Slack does, keeps each posted message as ``chat.update`` leaves
it (``messages``, so a click can carry the blocks Slack would send), answers
``usergroups.users.list`` from ``usergroup_members``, and can send Socket Mode envelopes to a connected
client and collect its acks. Tests point the SDK's ``base_url`` here (``slack_api_url``) and put
``mock.response_url(...)`` in the payloads they send.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web


@dataclass
class Call:
    """One recorded request."""

    method: str
    body: dict[str, Any]
    token: str = ""
    at: float = field(default_factory=time.monotonic)
    raw: bytes = b""
    #: the client's address and port: one per TCP connection the client opened
    peer: str = ""


def _peer(request: web.Request) -> str:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return f"{peer[0]}:{peer[1]}" if peer else ""


class MockSlackApi:
    """Start with ``await mock.start()``; ``calls`` holds everything received, in order."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        #: Web API method -> Slack error string to answer instead of ok
        self.failures: dict[str, str] = {}
        #: Web API method -> how many more calls get HTTP 429 with Retry-After: 1 (rate limiting)
        self.rate_limited: dict[str, int] = {}
        #: Web API method -> how many more calls are answered by dropping the connection
        self.disconnect: dict[str, int] = {}
        #: Web API method -> an event its calls wait for after they took effect and before they are
        #: answered (a process stopped there has posted a message it never learnt the ts of)
        self.stall: dict[str, asyncio.Event] = {}
        #: user-group id -> member user ids (``usergroups.users.list``); unknown groups have none
        self.usergroup_members: dict[str, list[str]] = {}
        #: the ``x-oauth-scopes`` header Slack sends with every Web API answer (None: not sent)
        self.scopes: str | None = None
        #: (channel, ts) -> the message as it stands: ``blocks``, ``text``, ``ts``, ``thread_ts``
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.socket_acks: list[dict[str, Any]] = []
        self.socket_connections = 0
        self._ts = itertools.count(1)
        self._ws: web.WebSocketResponse | None = None
        self._ws_ready = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> MockSlackApi:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # the SDK sends a few methods as GET
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/response/{hook}", self._response)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._ws is not None and not self._ws.closed:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, hook: str) -> str:
        return f"{self.base}/response/{hook}"

    # -- queries -----------------------------------------------------------------------------
    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        return self.messages[(channel, ts)]

    def find_button(
        self, value: str, *, action_id: str | None = None
    ) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]] | None:
        """(channel, message, actions block, button or picker) of the first button, or node
        picker option, now carrying ``value`` (and, if given, that ``action_id``)."""
        for (channel, _), msg in self.messages.items():
            for block in msg.get("blocks") or []:
                for element in block.get("elements") or [] if block.get("type") == "actions" else []:
                    values = [o.get("value") for o in element.get("options") or []] or [element.get("value")]
                    if value in values and action_id in (None, element.get("action_id")):
                        return channel, msg, block, element
        return None

    async def wait_for(self, predicate: Callable[[], Any], *, timeout: float = 10.0) -> Any:
        """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout}s; calls so far: {[c.method for c in self.calls]}"
                )
            await asyncio.sleep(0.01)

    # -- handlers ----------------------------------------------------------------------------
    async def _read(self, request: web.Request) -> tuple[dict[str, Any], bytes]:
        raw = await request.read()
        body: dict[str, Any] = dict(parse_qsl(request.query_string))
        ctype = request.headers.get("Content-Type", "")
        if "json" in ctype and raw:
            body.update(json.loads(raw))
        elif raw and "multipart" not in ctype:
            body.update(parse_qsl(raw.decode("utf-8", "replace")))
        for key in ("blocks", "attachments", "files"):
            if isinstance(body.get(key), str):
                with contextlib.suppress(ValueError):
                    body[key] = json.loads(body[key])
        return body, raw

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body, raw = await self._read(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") or str(body.get("token", ""))
        self.calls.append(Call(method, body, token, raw=raw, peer=_peer(request)))
        headers = {"x-oauth-scopes": self.scopes} if self.scopes is not None else None
        if method in self.failures:
            return web.json_response({"ok": False, "error": self.failures[method]}, headers=headers)
        if self.rate_limited.get(method, 0) > 0:
            self.rate_limited[method] -= 1
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "1"})
        if self.disconnect.get(method, 0) > 0:
            self.disconnect[method] -= 1
            assert request.transport is not None
            request.transport.abort()  # the client sees the connection drop, no answer
            raise ConnectionResetError(f"{method}: dropped by the test")
        answer = self._answer(method, body)
        if method in self.stall:
            await self.stall[method].wait()
        return web.json_response(answer, headers=headers)

    def _answer(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://test.slack.com/",
                "team": "test",
                "user": "gpubot",
                "team_id": "T0TEST",
                "user_id": "U0BOT",
                "bot_id": "B0BOT",
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            self.messages[(str(body.get("channel")), ts)] = {
                "ts": ts,
                "thread_ts": body.get("thread_ts"),
                "text": body.get("text"),
                "blocks": body.get("blocks") or [],
                "metadata": body.get("metadata"),
            }
            return {
                "ok": True,
                "channel": body.get("channel"),
                "ts": ts,
                "message": {"text": body.get("text"), "ts": ts, "thread_ts": body.get("thread_ts")},
            }
        if method == "conversations.history":
            return {"ok": True, "messages": self._history(body), "has_more": False}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1700000000.{next(self._ts):06d}"}
        if method == "chat.update":
            msg = self.messages.get((str(body.get("channel")), str(body.get("ts"))))
            if msg is not None:
                msg["text"] = body.get("text")
                if "blocks" in body:
                    msg["blocks"] = body.get("blocks") or []
            return {
                "ok": True,
                "channel": body.get("channel"),
                "ts": body.get("ts"),
                "text": body.get("text"),
            }
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):06d}"
            return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = body.get("files") or []
            return {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        if method == "usergroups.users.list":
            return {"ok": True, "users": list(self.usergroup_members.get(str(body.get("usergroup")), []))}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}
        return {"ok": True}

    def _history(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """A channel's top-level messages since ``oldest``, newest first (metadata on request)."""
        channel, oldest = str(body.get("channel")), float(body.get("oldest") or 0)
        found = []
        for (where, ts), msg in self.messages.items():
            if where != channel or float(ts) < oldest or msg.get("thread_ts") not in (None, ts):
                continue
            shown = {"type": "message", "ts": ts, "text": msg.get("text"), "bot_id": "B0BOT"}
            if str(body.get("include_all_metadata")).lower() in ("1", "true") and msg.get("metadata"):
                shown["metadata"] = msg["metadata"]
            found.append(shown)
        return sorted(found, key=lambda m: float(m["ts"]), reverse=True)

    async def _upload(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.calls.append(Call("upload", {"file_id": request.match_info["file_id"]}, raw=raw, peer=_peer(request)))
        return web.Response(text=f"OK - {len(raw)}")

    async def _response(self, request: web.Request) -> web.Response:
        body, raw = await self._read(request)
        self.calls.append(
            Call("response_url", {**body, "hook": request.match_info["hook"]}, raw=raw, peer=_peer(request))
        )
        return web.Response(text="ok")

    # -- Socket Mode -------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.socket_connections += 1
        self._ws = ws
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0TEST"}})
        self._ws_ready.set()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                self.socket_acks.append(json.loads(msg.data))
            elif msg.type == WSMsgType.ERROR:
                break
        return ws

    async def send_envelope(self, envelope: dict[str, Any], *, timeout: float = 10.0) -> None:
        """Send a Socket Mode envelope to the connected client (waits for the connection)."""
        await asyncio.wait_for(self._ws_ready.wait(), timeout)
        assert self._ws is not None
        await self._ws.send_json(envelope)
