"""Slack's side of the ack benchmarks, in a process of its own: signed ``/gpu`` commands sent to the
bot on a schedule, each ack timed from sending the request to receiving the response.

Why a process of its own: Slack is a remote service, and what it costs Slack to make 50 requests
at once is not the bot's cost. When the benchmarks sent the commands from the bot's own event
loop, a burst of 50 spent that loop's time building, signing and sending the requests and reading
the answers, and every ack waited for it (measured at 5,000 nodes: the first of 50 handlers
entered 32 ms after the burst began, then one every ~0.7 ms). Here the bot's loop does only what
it does in production: accept, verify, dispatch, answer.

``python -m bench.slack_side`` reads one JSON line on stdin (the bot's URL and the commands, each
with its offset in seconds from the start), prints ``ready`` once its HTTP client is set up,
waits for a ``go`` line, sends, and prints one JSON line: every command's send time
(``time.monotonic``, one clock for every process of the machine) and its ack in seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

#: the signing secret the benchmarks configure the bot with
SECRET = "bench-signing-secret-0123456789abcdef"


def signed(body: str) -> dict[str, str]:
    """The headers of a request Slack signed with ``SECRET``."""
    ts = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def slash_body(i: int, text: str, response_url: str) -> str:
    """The form body of ``/gpu text`` from user ``U{i}``, as Slack sends it."""
    return urlencode(
        {
            "token": "legacy",
            "team_id": "T0BENCH",
            "team_domain": "bench",
            "channel_id": "C0GPU",
            "channel_name": "gpu-ops",
            "user_id": f"U{i:05d}",
            "user_name": f"user{i}",
            "command": "/gpu",
            "text": text,
            "api_app_id": "A0BENCH",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": f"{i}.{time.time_ns()}.trigger",
        }
    )


@dataclass(frozen=True)
class Command:
    """One command of the plan: ``at`` seconds after ``go``."""

    i: int
    text: str
    at: float
    response_url: str


@dataclass(frozen=True)
class Ack:
    i: int
    text: str
    sent: float  # time.monotonic() when the request was sent
    ack_s: float


class SlackSide:
    """The sending process, from the benchmark's side: ``async with SlackSide(url, plan) as side``,
    then ``side.go()`` and ``await side.acks()``."""

    def __init__(self, url: str, plan: Sequence[Command]) -> None:
        self.url = url
        self.plan = list(plan)
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> SlackSide:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.slack_side",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        line = json.dumps({"url": self.url, "commands": [c.__dict__ for c in self.plan]})
        self._proc.stdin.write(line.encode() + b"\n")
        await self._proc.stdin.drain()
        ready = await self._proc.stdout.readline()
        if ready.strip() != b"ready":
            raise RuntimeError(f"the Slack side did not start: {ready[:200]!r}")
        return self

    def go(self) -> float:
        """Start sending; the start's ``time.monotonic()``."""
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(b"go\n")
        return time.monotonic()

    async def acks(self) -> list[Ack]:
        """Every command's ack, once all are in (in the plan's order)."""
        assert self._proc is not None and self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        await self._proc.wait()
        if self._proc.returncode != 0 or not line:
            raise RuntimeError(f"the Slack side failed (exit {self._proc.returncode})")
        return [Ack(**a) for a in json.loads(line)]

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()


async def _send_all(url: str, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import aiohttp  # noqa: PLC0415 - only the sending process needs it

    # bodies and signatures made before the start: only the requests themselves are timed
    requests = [(c, slash_body(c["i"], c["text"], c["response_url"])) for c in plan]
    requests = [(c, body, signed(body)) for c, body in requests]
    loop = asyncio.get_running_loop()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        print("ready", flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)
        start = time.monotonic()

        async def one(command: dict[str, Any], body: str, headers: dict[str, str]) -> dict[str, Any]:
            await asyncio.sleep(max(0.0, start + command["at"] - time.monotonic()))
            sent = time.monotonic()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"the bot answered {resp.status}")
            return {"i": command["i"], "text": command["text"], "sent": sent, "ack_s": time.monotonic() - sent}

        return await asyncio.gather(*(one(*r) for r in requests))


def main() -> None:
    plan = json.loads(sys.stdin.readline())
    acks = asyncio.run(_send_all(plan["url"], plan["commands"]))
    print(json.dumps(acks), flush=True)


if __name__ == "__main__":
    main()
