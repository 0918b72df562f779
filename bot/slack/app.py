"""The Bolt ``AsyncApp``: the ``/gpu`` slash command and the remediation buttons.

Listeners only ack and hand work to a tracked background task, so the ack goes back within
milliseconds whatever the cluster does (Slack allows 3 s). Bad input is answered in the ack
itself, as an ephemeral usage line. Retries are recognised and never run a second diagnosis. This
module holds no diagnosis logic and never executes a remediation: clicks go to an injected hook.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Coroutine, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.error import BoltUnhandledRequestError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import commands_for
from bot.errors import ConfigError, GpubotError
from bot.observability import Metrics, log_event
from bot.settings import Settings
from bot.slack.blocks import NOT_ENABLED, REMEDIATE_ACTION
from bot.slack.bolt_adapter import warm_authorization
from bot.slack.dedupe import RequestDedupe, SharedKeys, request_key
from bot.slack.hooks import Click, ClickHook, ClickKind, DiagnosisService, RemediationOffers
from bot.slack.identities import SlackIdentities
from bot.slack.offer_messages import APPROVE_ACTION, DENY_ACTION
from bot.slack.parse import parse_slash
from bot.slack.runner import Answerer, SlashRequest
from bot.slack.slots import DiagnosisSlots
from bot.slack.tasks import TaskTracker
from bot.slack.web import new_web_client, response_hook

log = logging.getLogger("gpubot.slack")

COMMAND = "/gpu"
#: matches ``remediate`` and ``remediate:N`` (buttons in one block need distinct action ids)
REMEDIATE_PATTERN = re.compile(rf"^{REMEDIATE_ACTION}(:\d+)?$")
#: the approval request's Approve and Deny buttons
APPROVAL_PATTERN = re.compile(rf"^({re.escape(APPROVE_ACTION)}|{re.escape(DENY_ACTION)})$")
SHUTTING_DOWN = "gpubot is restarting; please try again in a minute."
#: request-context key under which our transports collect work to start once the ack is sent
AFTER_ACK = "gpubot_after_ack"
#: the subcommands /gpu offers: the only words a metrics label may carry
_SLACK_WORDS = frozenset(c.name for c in commands_for("slack"))

#: a name, the work, and how long shutdown may wait for it (None: the ordinary grace)
Job = tuple[str, Callable[[], Coroutine[Any, Any, Any]], float | None]


def unreachable(exc: aiohttp.ClientConnectorError) -> str:
    """One line naming the host that could not be reached and why, with what to check."""
    where = f"{exc.host}:{exc.port}" if exc.port not in (None, 443) else str(exc.host)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        why = "its name does not resolve (no network or no DNS here?)"
    else:
        why = f"the connection failed ({exc.os_error.strerror or type(exc.os_error).__name__})"
    return f"cannot reach {where}: {why}; check the network, DNS and any HTTPS_PROXY this host needs"


@dataclass
class SlackBot:
    """The Bolt app plus what outlives a request: background tasks, dedupe memory, metrics."""

    app: AsyncApp
    service: DiagnosisService
    metrics: Metrics
    tasks: TaskTracker = field(default_factory=TaskTracker)
    recent: RequestDedupe = field(default_factory=RequestDedupe)

    async def start(self) -> None:
        """Check the bot token once (a bad token fails here, not at the first command) and warm
        Bolt's authorization cache so the first ack does not wait for ``auth.test``."""
        try:
            result = await self.app.client.auth_test()
        except SlackApiError as exc:
            error = exc.response.get("error", "error")
            raise ConfigError(f"Slack rejected the bot token ({error})") from None
        except aiohttp.ClientConnectorError as exc:  # no network, no DNS, a proxy in the way: not a bug
            raise ConfigError(unreachable(exc)) from None
        warm_authorization(self.app, result)
        await self.service.start()

    def after_ack(
        self,
        context: MutableMapping[str, Any],
        name: str,
        job: Callable[[], Coroutine[Any, Any, Any]],
        *,
        grace_s: float | None = None,
    ) -> None:
        """Start ``job`` once the ack has been sent: our transports run the collected jobs after
        writing the response; any other adapter gets them started at once. ``grace_s``: how long
        shutdown waits for it, when longer than ``shutdown_grace_s`` (a remediation's maximum)."""
        pending = context.get(AFTER_ACK)
        if isinstance(pending, list):
            pending.append((name, job, grace_s))
        else:
            self.tasks.spawn(job(), name=name, grace_s=grace_s)

    def after_ack_once(
        self,
        context: MutableMapping[str, Any],
        name: str,
        key: str,
        job: Callable[[], Coroutine[Any, Any, Any]],
        *,
        kind: str,
        grace_s: float | None = None,
        on_duplicate: Callable[[], None] | None = None,
    ) -> None:
        """``after_ack``, unless the request ``key`` names was handled already (a Slack retry).

        The retry check asks this process's memory, then the store every replica shares (a
        write: a SQLite commit, or an API call with ``state: kubernetes``), so it runs after the
        ack: the ack is the same either way (empty) and must not wait on that store (with four
        diagnoses in flight the commit put 50-70 ms on the p99 ack)."""

        async def once() -> None:
            if not await self.recent.first(key):
                self.metrics.duplicates.labels(kind=kind).inc()
                if on_duplicate is not None:
                    on_duplicate()
                return
            await job()

        self.after_ack(context, name, once, grace_s=grace_s)

    def start_after_ack(self, jobs: list[Job]) -> None:
        for name, job, grace_s in jobs:
            self.tasks.spawn(job(), name=name, grace_s=grace_s)

    async def drain(self, timeout: float) -> int:
        """Finish in-flight answers (bounded), then return how many had to be cancelled."""
        return await self.tasks.drain(timeout)


def create_app(
    settings: Settings,
    service: DiagnosisService,
    *,
    metrics: Metrics | None = None,
    offers: RemediationOffers | None = None,
    on_remediate: ClickHook | None = None,
    client: AsyncWebClient | None = None,
    remediation_grace_s: float | None = None,
    seen: SharedKeys | None = None,
) -> SlackBot:
    """Build the Slack app for ``settings``; ``transport.SlackServer`` connects it to Slack.

    ``offers`` registers remediation buttons (none: buttons show as "not enabled") and, if it
    has ``offers_posted``, learns where they were posted; ``on_remediate`` receives each click
    (with the clicked message's blocks and thread). ``client`` overrides the Web API client (tests).
    ``remediation_grace_s``: how long shutdown waits for a click's run (the longest action's maximum).
    ``seen``: Slack requests already handled by any replica (retry de-duplication across processes).
    """
    metrics = metrics or Metrics()
    web = client or new_web_client(settings, metrics=metrics)
    http_mode = settings.slack_mode == "http"
    app = AsyncApp(
        client=web,
        signing_secret=settings.slack_signing_secret.get() if http_mode else "",
        request_verification_enabled=http_mode,
        # the listeners only ack and hand work to ``after_ack``, so answering after they return
        # costs nothing and keeps Bolt from starting untracked tasks of its own
        process_before_response=True,
        logger=logging.getLogger("gpubot.slack.bolt"),
        name="gpubot",
        # a well-formed request nothing here handles goes to ``on_error`` below (one log line)
        # instead of Bolt's multi-line suggestion; the transport acknowledges it with a 200
        raise_error_for_unhandled_request=True,
    )

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        if isinstance(error, BoltUnhandledRequestError):
            log_event(log, "request ignored: no handler", kind=str(body.get("type") or "command")[:40])
            return
        log.error("a Slack listener failed", exc_info=error)  # a bug of ours: keep its traceback
    bot = SlackBot(app=app, service=service, metrics=metrics, recent=RequestDedupe(seen))
    identities = SlackIdentities(settings.identity_map, web)
    answerer = Answerer(
        client=web,
        service=service,
        metrics=metrics,
        offers=offers,
        identities=identities,
        slots=DiagnosisSlots(settings.max_concurrent_diagnoses),
    )

    @app.command(COMMAND)
    async def on_gpu(ack: AsyncAck, body: dict[str, Any], context: MutableMapping[str, Any]) -> None:
        received = time.monotonic()
        text = str(body.get("text") or "")
        channel = str(body.get("channel_id") or "")
        user = str(body.get("user_id") or "")
        try:
            inv = parse_slash(text, channel_id=channel, settings=settings)
        except GpubotError as exc:
            await ack(response_type="ephemeral", text=exc.user_message)
            metrics.commands.labels(subcommand=_first_word(text), outcome="usage").inc()
            log_event(log, "command", command=_first_word(text), user=user, channel=channel, outcome="usage")
            return
        if bot.tasks.closing:
            await ack(response_type="ephemeral", text=SHUTTING_DOWN)
            return
        await ack()
        req = SlashRequest(
            user_id=user,
            channel_id=channel,
            team_id=str(body.get("team_id") or ""),
            text=text,
            response_url=str(body.get("response_url") or ""),
            received=received,
        )
        bot.after_ack_once(
            context,
            f"gpu-{inv.command}",
            request_key("command", body),
            lambda: answerer.answer(inv, req),
            kind="command",
            on_duplicate=lambda: log_event(
                log, "duplicate request ignored", command=inv.command, user=user, channel=channel
            ),
        )

    async def on_click(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], context: MutableMapping[str, Any]
    ) -> None:
        await ack()
        key = request_key("action", {**body, "action_ts": action.get("action_ts")})
        user = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id") or "")
        container = body.get("container") or {}
        message = body.get("message") or {}
        message_ts = str(container.get("message_ts") or message.get("ts") or "")
        thread_ts = str(message.get("thread_ts") or container.get("thread_ts") or "") or None
        raw_blocks = message.get("blocks")
        blocks = [b for b in raw_blocks if isinstance(b, Mapping)] if isinstance(raw_blocks, list) else None
        response_url = str(body.get("response_url") or "")
        # a button carries its offer as the value; a node picker as the value of the option picked
        offer = str(action.get("value") or (action.get("selected_option") or {}).get("value") or "")
        action_id = str(action.get("action_id") or "")
        kind: ClickKind = (
            "approve" if action_id == APPROVE_ACTION else "deny" if action_id == DENY_ACTION else "run"
        )
        log_event(log, "remediation clicked", user=user, channel=channel, offer=offer[:64], kind=kind)
        if on_remediate is None:
            if response_url:
                bot.after_ack_once(
                    context, "remediate-not-enabled", key, lambda: _say_not_enabled(response_url, web), kind="action"
                )
            return
        click = Click(offer, user, channel, message_ts, response_url, blocks=blocks, thread_ts=thread_ts, kind=kind)
        hook = on_remediate

        async def handle() -> None:
            await hook(click)

        bot.after_ack_once(
            context,
            "remediate",
            key,
            handle,
            kind="action",
            grace_s=remediation_grace_s,
            on_duplicate=lambda: log_event(log, "duplicate request ignored", kind=kind, user=user, offer=offer[:64]),
        )

    app.action(REMEDIATE_PATTERN)(on_click)
    app.action(APPROVAL_PATTERN)(on_click)

    return bot


async def _say_not_enabled(response_url: str, web: AsyncWebClient) -> None:
    await response_hook(response_url, web).send(
        text=NOT_ENABLED, response_type="ephemeral", replace_original=False
    )


def _first_word(text: str) -> str:
    """A bounded label for metrics: only known words, so user text cannot blow up cardinality."""
    word = text.split(maxsplit=1)[0] if text.split() else "help"
    return word if word in _SLACK_WORDS else "unknown"
