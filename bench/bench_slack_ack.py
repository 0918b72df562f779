"""Slack ack latency in HTTP mode: 200 signed slash commands, 50 in flight at a time.

The real app (``bot.slack.app.create_app`` behind ``transport.SlackServer``) on a loopback port,
a local Slack Web API (``tests.slack.mock_slack_api``) receiving the progress messages and
reports, and a stand-in diagnosis that takes ``--work-ms`` per command, so acks are measured
while earlier commands are still being diagnosed and posted. Latency is from sending the
request to receiving the response (Slack requires it within 3 s).

``python -m bench.bench_slack_ack [--commands 200] [--concurrency 50] [--work-ms 300]``
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bench.common import emit, percentile, table
from bot.commands import Invocation
from bot.observability import Metrics
from bot.report import Finding, Report
from bot.settings import load_settings
from bot.slack.app import create_app
from bot.slack.transport import SlackServer
from tests.slack.mock_slack_api import MockSlackApi

SECRET = "bench-signing-secret-0123456789abcdef"


class SlowService:
    """A diagnosis that takes a fixed time and returns a one-finding report."""

    def __init__(self, work_s: float) -> None:
        self.work_s = work_s
        self.runs = 0

    async def run(self, inv: Invocation) -> Report:
        self.runs += 1
        await asyncio.sleep(self.work_s)
        report = Report(command=inv.command, target=inv.target(), cluster="sim", elapsed_ms=int(self.work_s * 1000))
        report.add(
            Finding(
                code="SCHED_INSUFFICIENT_GPU",
                severity="warning",
                title="no node has 8 free nvidia.com/gpu",
                evidence=["0/5000 nodes are available: 250 Insufficient nvidia.com/gpu"],
                explanation="Every GPU node is full.",
                next_steps=["Wait, or free a node"],
            )
        )
        return report

    async def start(self) -> None:
        return None

    def ready(self) -> bool:
        return True

    async def close(self) -> None:
        return None


def signed(body: str) -> dict[str, str]:
    ts = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def command_body(mock: MockSlackApi, i: int) -> str:
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
            "text": f"why-pending train-{i} -n ai",
            "api_app_id": "A0BENCH",
            "is_enterprise_install": "false",
            "response_url": mock.response_url(f"cmd{i}"),
            "trigger_id": f"{i}.1.trigger",
        }
    )


async def run(commands: int, concurrency: int, work_s: float) -> dict[str, Any]:
    mock = await MockSlackApi().start()
    settings = load_settings(
        env={},
        slack_bot_token="xoxb-bench-token",
        slack_signing_secret=SECRET,
        slack_mode="http",
        slack_api_url=mock.api_url,
        http_host="127.0.0.1",
        http_port=0,
        shutdown_grace_s=30.0,
    )
    service = SlowService(work_s)
    bot = create_app(settings, service, metrics=Metrics())
    server = SlackServer(bot, settings)
    await bot.start()
    await server.start()
    url = f"http://127.0.0.1:{server.port}/slack/events"
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    gate = asyncio.Semaphore(concurrency)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def one(i: int) -> None:
                body = command_body(mock, i)
                async with gate:
                    headers = signed(body)
                    t = time.perf_counter()
                    async with session.post(url, data=body, headers=headers) as resp:
                        await resp.read()
                        latencies.append(time.perf_counter() - t)
                        statuses[resp.status] = statuses.get(resp.status, 0) + 1

            t0 = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(commands)))
            total = time.perf_counter() - t0
            deadline = time.monotonic() + 60
            while service.runs < commands and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
    finally:
        await server.stop(settings.shutdown_grace_s)
        await mock.stop()
    return {
        "commands": commands,
        "concurrency": concurrency,
        "work_ms": int(work_s * 1000),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "max_ms": max(latencies) * 1000,
        "statuses": statuses,
        "diagnoses_started": service.runs,
        "send_s": total,
        "met": percentile(latencies, 99) * 1000 <= 100,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commands", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--work-ms", type=int, default=300)
    args = ap.parse_args()
    r = asyncio.run(run(args.commands, args.concurrency, args.work_ms / 1000))
    rows = [
        [
            r["commands"],
            r["concurrency"],
            r["p50_ms"],
            r["p99_ms"],
            r["max_ms"],
            r["statuses"],
            r["diagnoses_started"],
            "met" if r["met"] else "missed",
        ]
    ]
    headers = [
        "commands",
        "in flight",
        "ack p50 ms",
        "ack p99 ms",
        "max ms",
        "HTTP statuses",
        "diagnosed",
        "p99<=100ms",
    ]
    emit("slack_ack", table(headers, rows), r)


if __name__ == "__main__":
    main()
