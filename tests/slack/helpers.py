"""Shared pieces of the Slack tests: signed requests, payloads, fake services, a running app."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.commands import Invocation
from bot.observability import Metrics
from bot.report import Finding, Remediation, Report
from bot.settings import Settings, load_settings
from bot.slack.app import SlackBot, create_app
from bot.slack.hooks import ClickHook, DiagnosisService, RemediationOffers
from bot.slack.transport import SlackServer
from tests.slack.mock_slack_api import MockSlackApi

BOT_TOKEN = "xoxb-1111-2222-testbottokenvalue"
APP_TOKEN = "xapp-1-A0TEST-3333-testapptokenvalue"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
_ids = itertools.count(1)


def sign(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    """Headers exactly as Slack builds them: ``v0=`` + HMAC-SHA256 of ``v0:{ts}:{body}``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def slash_payload(
    mock: MockSlackApi, text: str, *, channel: str = "C0GPU", user: str = "U0ALICE"
) -> dict[str, str]:
    n = next(_ids)
    return {
        "token": "legacy-verification-token",
        "team_id": "T0TEST",
        "team_domain": "test",
        "channel_id": channel,
        "channel_name": "gpu-ops",
        "user_id": user,
        "user_name": "alice",
        "command": "/gpu",
        "text": text,
        "api_app_id": "A0TEST",
        "is_enterprise_install": "false",
        "response_url": mock.response_url(f"cmd{n}"),
        "trigger_id": f"{n}.1234.trigger{n}",
    }


def action_payload(
    mock: MockSlackApi,
    value: str,
    *,
    user: str = "U0BOB",
    message: dict[str, Any] | None = None,
    channel: str = "C0GPU",
    action_id: str = "remediate:0",
    block_id: str = "remediate-0-0",
    picker: bool = False,
) -> dict[str, Any]:
    """A ``block_actions`` click as Slack sends it; ``message`` (ts, thread_ts, blocks) is the
    clicked message, by default a bare report at ts ``1700000000.000002`` without blocks."""
    n = next(_ids)
    msg: dict[str, Any] = {"ts": "1700000000.000002", "text": "report"}
    msg.update({k: v for k, v in (message or {}).items() if v is not None})
    container: dict[str, Any] = {"type": "message", "message_ts": msg["ts"], "channel_id": channel}
    if msg.get("thread_ts"):
        container["thread_ts"] = msg["thread_ts"]
    return {
        "type": "block_actions",
        "team": {"id": "T0TEST", "domain": "test"},
        "user": {"id": user, "username": "bob", "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "token": "legacy-verification-token",
        "container": container,
        "trigger_id": f"{n}.5678.click{n}",
        "channel": {"id": channel, "name": "gpu-ops"},
        "message": msg,
        "response_url": mock.response_url(f"act{n}"),
        "actions": [_picked(action_id, block_id, value, n) if picker else {
            "type": "button",
            "action_id": action_id,
            "block_id": block_id,
            "value": value,
            "action_ts": f"1700000001.{n:06d}",
            "text": {"type": "plain_text", "text": "pod.delete"},
        }],
    }


def _picked(action_id: str, block_id: str, value: str, n: int) -> dict[str, Any]:
    """A node picker's option chosen, as Slack sends it: no value, the option picked."""
    return {
        "type": "static_select",
        "action_id": action_id,
        "block_id": block_id,
        "selected_option": {"text": {"type": "plain_text", "text": "picked"}, "value": value},
        "placeholder": {"type": "plain_text", "text": "pick"},
        "action_ts": f"1700000001.{n:06d}",
    }


def click_payload(
    mock: MockSlackApi, value: str, *, user: str = "U0BOB", action_id: str | None = None
) -> dict[str, Any]:
    """A click on the button carrying ``value`` (and ``action_id``, if given: Approve on an
    approval request carries the same offer id as the report's button) as the mock's message now
    shows it (the blocks, ts, thread and ids Slack would send); a value on no button gives the bare
    default payload."""
    found = mock.find_button(value, action_id=action_id)
    if found is None:
        return action_payload(mock, value, user=user)
    channel, msg, block, element = found
    return action_payload(
        mock,
        value,
        user=user,
        message={"ts": msg["ts"], "thread_ts": msg.get("thread_ts"), "blocks": msg["blocks"]},
        channel=channel,
        action_id=element["action_id"],
        block_id=block.get("block_id", ""),
        picker=element.get("type") == "static_select",
    )


def form(payload: dict[str, str]) -> str:
    return urlencode(payload)


def interaction_form(payload: dict[str, Any]) -> str:
    return urlencode({"payload": json.dumps(payload)})


def settings_for(
    mock: MockSlackApi, *, mode: str = "http", base: Settings | None = None, **extra: Any
) -> Settings:
    values: dict[str, Any] = {
        "slack_bot_token": BOT_TOKEN,
        "slack_app_token": APP_TOKEN,
        "slack_signing_secret": SIGNING_SECRET,
        "slack_mode": mode,
        "slack_api_url": mock.api_url,
        "http_host": "127.0.0.1",
        "http_port": 0,
        "shutdown_grace_s": 5.0,
        **extra,
    }
    if base is not None:
        values = {
            "clusters": base.clusters,
            "ssh_user": base.ssh_user,
            "state_path": base.state_path,
            "node_access": base.node_access,
            **values,
        }
    return load_settings(env={}, **values)


class FakeService:
    """A stand-in service: answers a fixed report, optionally waiting on a gate first."""

    def __init__(self, report: Report | None = None, *, gate: asyncio.Event | None = None) -> None:
        self.report = report or sample_report()
        self.gate = gate
        self.runs: list[tuple[Invocation, float]] = []
        #: called first thing in ``run`` (tests record what had happened by then)
        self.on_run: Callable[[], None] | None = None
        self.started = False
        self.closed = False

    async def run(self, inv: Invocation) -> Report:
        self.runs.append((inv, time.monotonic()))
        if self.on_run is not None:
            self.on_run()
        if self.gate is not None:
            await self.gate.wait()
        if inv.command in ("help", "runbook"):
            return Report(command=inv.command, target=inv.target(), text="gpubot help\n  why-pending POD")
        return self.report

    async def start(self) -> None:
        self.started = True

    def ready(self) -> bool:
        return self.started

    async def close(self) -> None:
        self.closed = True


def sample_report() -> Report:
    report = Report(
        command="why-pending",
        target={"kind": "Pod", "name": "train-0", "namespace": "ai"},
        cluster="sim",
        elapsed_ms=812,
    )
    report.add(
        Finding(
            code="CHECKPOINT_ZOMBIE",
            severity="critical",
            title="kubelet checkpoint holds devices of deleted pods",
            evidence=["PodUID 9a15d2b5 (gone) holds GPU-9b341c59"],
            explanation="The device plugin still counts these cards as allocated.",
            next_steps=["Clear the checkpoint behind a cordon"],
            remediations=[
                Remediation("checkpoint.clear", {"node": "tcs-10-29-25-5"}, "Cordon, stop kubelet…")
            ],
        )
    )
    report.skip("ssh tcs-10-29-25-6", "timeout")
    return report


@dataclass
class Running:
    bot: SlackBot
    server: SlackServer
    service: DiagnosisService

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"


@asynccontextmanager
async def running_app(
    settings: Settings,
    service: DiagnosisService,
    *,
    offers: RemediationOffers | None = None,
    on_remediate: ClickHook | None = None,
    metrics: Metrics | None = None,
) -> AsyncIterator[Running]:
    bot = create_app(settings, service, metrics=metrics or Metrics(), offers=offers, on_remediate=on_remediate)
    server = SlackServer(bot, settings)
    await bot.start()
    await server.start()
    try:
        yield Running(bot, server, service)
    finally:
        await server.stop(settings.shutdown_grace_s)
        await service.close()


async def post(url: str, body: str, headers: dict[str, str]) -> tuple[int, str, float]:
    """POST and return (status, text, monotonic time the response arrived)."""
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
        text = await resp.text()
        return resp.status, text, time.monotonic()


async def slash_and_direct(
    mock_slack: Any, scenario: Path, workdir: Path, reader: str, command: str, *, surface: str = "cli"
) -> Report:
    """Send ``/gpu COMMAND`` signed to the bot reading through ``reader`` on a simulator of
    ``scenario`` and wait for its answer to land; return what the service says for the same
    command read directly, for the test to compare the posted blocks with."""
    from bot.commands import parse_invocation
    from bot.service import Service
    from bot.sim.cluster import SimCluster
    from tests.readers import service_reading

    async with SimCluster.from_file(scenario, workdir=workdir) as sim:
        settings = settings_for(mock_slack, base=sim.settings())
        async with running_app(settings, await service_reading(settings, reader)) as app:
            body = form(slash_payload(mock_slack, command))
            status, ack, _ = await post(app.url + "/slack/events", body, sign(body))
            assert (status, ack) == (200, "")
            await mock_slack.wait_for(lambda: mock_slack.of("chat.update"), timeout=60)
        expected_service = Service(settings)
        try:
            return await expected_service.run(parse_invocation(command.split(), surface=surface))
        finally:
            await expected_service.close()
