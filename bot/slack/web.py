"""The one way the bot builds its Slack Web API client.

Slack rate-limits by method (HTTP 429 with Retry-After) and, like any API, drops connections and
answers 5xx now and then. Without retries a 429 on ``chat.update`` would leave "diagnosing…"
in a channel forever; slack_sdk's retry handlers wait as told and try again, a bounded number
of times, so a reply arrives late rather than never. When Slack still refuses after the
retries, or never answers, a call raises one of ``SLACK_FAILURES``: callers fall back to something
the user still sees (the command's ``response_url``) and count it, never "internal error".
"""

from __future__ import annotations

import logging

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.settings import Settings

#: retries per call for each kind of trouble (Slack's own guidance: honour Retry-After)
RATE_LIMIT_RETRIES = 3
CONNECTION_RETRIES = 2
SERVER_ERROR_RETRIES = 2


def new_web_client(settings: Settings) -> AsyncWebClient:
    """A Web API client that retries rate limits (per Retry-After), dropped connections and 5xx."""
    return AsyncWebClient(
        token=settings.slack_bot_token.get() or None,
        base_url=settings.slack_api_url,
        logger=logging.getLogger("gpubot.slack.web"),
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            AsyncServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
        ],
    )


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
