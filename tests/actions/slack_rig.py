"""A whole bot on real ports for the remediation scenario tests: simulator, Slack HTTP app with the
remediation service's Slack view, a recording mock of Slack, and signed requests to drive it.

Shared by ``tests/scenarios/test_remediation_*.py``; it only wires things and waits, it asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import Metrics
from bot.registry import action_label
from bot.remediation import RemediationService
from bot.service import Service
from bot.settings import Settings
from bot.sim.cluster import SimCluster
from bot.slack.hooks import Click
from bot.slack.remediation import SlackRemediation
from tests.actions.conftest import APPROVER, REQUESTER, scenario
from tests.slack.helpers import (
    BOT_TOKEN,
    Running,
    click_payload,
    form,
    interaction_form,
    post,
    running_app,
    settings_for,
    sign,
    slash_payload,
)
from tests.slack.mock_slack_api import MockSlackApi

WHY_PENDING = "why-pending gpu-full-5d8c6-q7wz2 -n ai"


@dataclass
class Process:
    """One bot process: the remediation service, its Slack view and the running Slack app."""

    rem: RemediationService
    slack: SlackRemediation
    app: Running
    metrics: Metrics
    #: offer ids whose click handling has finished, in order
    handled: list[str] = field(default_factory=list)


@dataclass
class SlackRig:
    sim: SimCluster
    bot: Process
    mock: MockSlackApi
    settings: Settings

    @property
    def rem(self) -> RemediationService:
        return self.bot.rem

    @property
    def app(self) -> Running:
        return self.bot.app

    @property
    def handled(self) -> list[str]:
        return self.bot.handled

    async def command(self, text: str = WHY_PENDING, *, user: str = REQUESTER) -> dict[str, list[str]]:
        """Run a slash command; return button label -> offer ids from the report it posted."""
        before = len(self._reports())
        body = form(slash_payload(self.mock, text, user=user))
        status, _, _ = await post(self.app.url + "/slack/events", body, sign(body))
        assert status == 200
        await self.mock.wait_for(lambda: len(self._reports()) > before, timeout=60)
        # the answer is complete (offers recorded, placeholder updated) once its task is gone
        await self.mock.wait_for(lambda: len(self.app.bot.tasks) == 0, timeout=60)
        return buttons(self._reports()[-1].body["blocks"])

    def last_report_text(self) -> str:
        return json.dumps(self._reports()[-1].body["blocks"])

    def _reports(self) -> list[Any]:
        return [
            c
            for c in self.mock.of("chat.postMessage")
            if c.body.get("thread_ts") and "finding-0" in json.dumps(c.body.get("blocks") or [])
        ]

    async def click(
        self, value: str, *, user: str = APPROVER, action_id: str | None = None, timeout: float = 60
    ) -> None:
        """A signed block_actions click on the button as the channel now shows it (Slack sends
        the message's blocks and thread); returns once the bot finished handling it.
        ``action_id`` picks Approve or Deny on an approval request carrying the same offer."""
        before = len(self.handled)
        body = interaction_form(click_payload(self.mock, value, user=user, action_id=action_id))
        status, _, _ = await post(self.app.url + "/slack/events", body, sign(body))
        assert status == 200
        await self.mock.wait_for(lambda: len(self.handled) > before, timeout=timeout)

    async def clicks(self, value: str, n: int, *, user: str = APPROVER) -> None:
        """``n`` signed clicks on one button at once (distinct payloads, as from double clicks)."""
        before = len(self.handled)
        bodies = [interaction_form(click_payload(self.mock, value, user=user)) for _ in range(n)]
        results = await asyncio.gather(*(post(self.app.url + "/slack/events", b, sign(b)) for b in bodies))
        assert all(status == 200 for status, _, _ in results)
        await self.mock.wait_for(lambda: len(self.handled) >= before + n, timeout=120)


def buttons(blocks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Label -> offer ids of every remediation button, and of every option of a node picker (its
    option text is the label a button for that target would carry)."""
    found: dict[str, list[str]] = {}
    for block in blocks:
        for element in block.get("elements") or [] if block.get("type") == "actions" else []:
            if element.get("type") == "static_select":
                for option in element["options"]:
                    found.setdefault(option["text"]["text"], []).append(option["value"])
            else:
                found.setdefault(element["text"]["text"], []).append(element["value"])
    return found


def button_text(action: str, node: str) -> str:
    """The label of ``action``'s button (or picker option) for ``node``."""
    return action_label(action, {"node": node})


@asynccontextmanager
async def slack_rig(
    tmp_path: Path, mock: MockSlackApi, *, name: str = "zombie-checkpoint", state: Path | None = None, **extra: Any
) -> AsyncIterator[SlackRig]:
    """Start everything; ``state`` names the SQLite file (to restart the bot on the same one).

    The simulator has the remediation component (an actuator pod per node), as a cluster where
    the bot offers node actions does; ``extra`` are settings (``node_access="agent"``…)."""
    async with SimCluster.from_file(scenario(name), workdir=tmp_path / "sim", remediation=True) as sim:
        values: dict[str, Any] = {"approvers": {"*": (APPROVER,)}, "node_ready_timeout_s": 5.0}
        values.update(extra)
        if state is not None:
            values["state_path"] = str(state)
        settings = settings_for(mock, base=sim.settings(), **values)
        async with started(settings, mock) as bot:
            yield SlackRig(sim, bot, mock, settings)


@asynccontextmanager
async def started(settings: Settings, mock: MockSlackApi) -> AsyncIterator[Process]:
    """One bot process wired as ``bot.wiring`` wires it, recovering its state file, plus a click
    hook that records each click once its handling has finished."""
    web = AsyncWebClient(token=BOT_TOKEN, base_url=mock.api_url)
    service = Service(settings)
    rem = RemediationService(settings, service.clients)
    metrics = Metrics()
    slack = SlackRemediation(rem, web, metrics=metrics)
    await slack.start()
    handled: list[str] = []

    async def hook(click: Click) -> None:
        try:
            await slack.on_click(click)
        finally:
            handled.append(click.offer_id)

    try:
        async with running_app(settings, service, offers=slack, on_remediate=hook, metrics=metrics) as app:
            yield Process(rem, slack, app, metrics, handled)
    finally:
        if web.session is not None:
            await web.session.close()


@asynccontextmanager
async def mock_slack_server() -> AsyncIterator[MockSlackApi]:
    """The Slack tests' recording mock of Slack, on a real port."""
    mock = await MockSlackApi().start()
    try:
        yield mock
    finally:
        await mock.stop()
