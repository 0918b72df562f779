"""The one way the bot builds its Slack Web API client.

Slack rate-limits by method (HTTP 429 with Retry-After) and, like any API, drops connections and
answers 5xx now and then. Without retries a 429 on ``chat.update`` would leave "diagnosing…"
in a channel forever; slack_sdk's retry handlers wait as told and try again, a bounded number
of times, so a reply arrives late rather than never. With ``metrics`` the client also counts
every 429 and every call that still failed, by Web API method. When Slack still refuses after the
retries, or never answers, a call raises one of ``SLACK_FAILURES``: callers fall back to something
the user still sees (the command's ``response_url``) and count it, never "internal error".
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.observability import Metrics
from bot.settings import Settings

#: retries per call for each kind of trouble (Slack's own guidance: honour Retry-After)
RATE_LIMIT_RETRIES = 3
CONNECTION_RETRIES = 2
SERVER_ERROR_RETRIES = 2


def _method_of(url: str) -> str:
    """``https://slack.com/api/chat.update?x=1`` → ``chat.update`` (a bounded label)."""
    tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return tail[:64] or "unknown"


class CountingRateLimitHandler(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 handler (wait for Retry-After, retry), counting each 429 by method."""

    def __init__(self, metrics: Metrics | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._metrics = metrics

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if self._metrics is not None and response is not None and response.status_code == 429:
            self._metrics.slack_rate_limited.labels(method=_method_of(request.url)).inc()
        return await super().can_retry_async(state=state, request=request, response=response, error=error)


class LoopSession:
    """One aiohttp session, made on first use in the running event loop, for every Slack call.

    slack_sdk opens a new session, so a new TCP connection and TLS handshake with slack.com, for
    each call made without one; the bot posts and edits messages and answers ``response_url`` all
    day, and each post paid a handshake (a click's refusal notes: one connection each). A session
    belongs to the loop it was made in: a call from another loop gets its own, and the old one is
    left to that loop. ``timeout_s`` is the whole call's limit, as slack_sdk sets it on a session
    of its own.
    """

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None

    def get(self) -> aiohttp.ClientSession | None:
        """The running loop's session; None outside a loop (slack_sdk then makes one per call)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout_s))
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the session if this loop made it (at shutdown, after the last call)."""
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


class CountingWebClient(AsyncWebClient):
    """An ``AsyncWebClient`` that counts the calls that failed after their retries, and keeps its
    connections to Slack open between calls (``LoopSession``), for Bolt's per-request clients and
    ``response_url`` posts too (``response_hook``)."""

    metrics: Metrics | None = None

    def __init__(self, **kwargs: Any) -> None:
        self._pool = LoopSession(kwargs.get("timeout", 30))  # slack_sdk's default call limit
        super().__init__(**kwargs)

    @property  # type: ignore[override]
    def session(self) -> aiohttp.ClientSession | None:
        return self._pool.get()

    @session.setter
    def session(self, given: aiohttp.ClientSession | None) -> None:
        if given is not None:
            raise ValueError("CountingWebClient keeps its own session")

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        try:
            return await super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            if self.metrics is not None:
                error = exc.response.get("error", "unknown") if isinstance(exc.response.data, dict) else "http"
                self.metrics.slack_api_errors.labels(method=api_method[:64], error=str(error)[:64]).inc()
            raise


def new_web_client(settings: Settings, *, metrics: Metrics | None = None) -> AsyncWebClient:
    """A Web API client that retries rate limits (per Retry-After), dropped connections and 5xx."""
    client = CountingWebClient(
        token=settings.slack_bot_token.get() or None,
        base_url=settings.slack_api_url,
        logger=logging.getLogger("gpubot.slack.web"),
        retry_handlers=[
            CountingRateLimitHandler(metrics, max_retry_count=RATE_LIMIT_RETRIES),
            AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            AsyncServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
        ],
    )
    client.metrics = metrics
    return client


def response_hook(url: str, web: AsyncWebClient | None) -> AsyncWebhookClient:
    """A poster to a command's or click's ``response_url`` on ``web``'s connections."""
    return AsyncWebhookClient(url, session=web.session if web is not None else None)


#: what a Web API or response_url call raises when Slack refuses after the retries or never answers
SLACK_FAILURES: tuple[type[BaseException], ...] = (SlackApiError, aiohttp.ClientError, TimeoutError, OSError)


def failure_text(exc: BaseException) -> str:
    """A short reason for a log line: Slack's error name, "timed out" or the connection error's kind."""
    if isinstance(exc, SlackApiError):
        try:
            return str(exc.response.get("error", "unknown"))
        except Exception:  # noqa: BLE001 - a non-JSON answer (a proxy's 405 page) has no error field
            return f"HTTP {getattr(exc.response, 'status_code', '?')}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"connection failed ({type(exc).__name__})"
