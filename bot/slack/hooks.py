"""The interfaces the Slack layer is given, so it stays a view.

The app factory receives a ``DiagnosisService`` (``bot.service.Service`` in production, a fake in
some tests) and, optionally, the remediation hooks the confirmation layer provides. Nothing here
runs a diagnosis or an action; these are only the shapes the Slack layer calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from bot.commands import Invocation
from bot.report import Finding, Remediation, Report


class DiagnosisService(Protocol):
    """What ``bot.service.Service`` offers the Slack layer."""

    async def run(self, inv: Invocation) -> Report: ...

    async def start(self) -> None: ...

    def ready(self) -> bool: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class OfferContext:
    """Who asked, where, and on which cluster: what an offer needs to be checked later."""

    user_id: str
    channel_id: str
    team_id: str
    cluster: str
    invocation: Invocation


class RemediationOffers(Protocol):
    """Registers an offered remediation and returns the opaque id its button will carry.

    Returning ``None`` means "do not offer this one here" (the message lists it without a button).
    The method may be a plain function or a coroutine function.
    """

    def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: OfferContext
    ) -> str | None | Awaitable[str | None]: ...


#: Called (after the ack) when someone clicks a remediation button, with positional arguments
#: ``(action_value, user_id, channel, message_ts, response_url)``; ``action_value`` is the opaque
#: offer id the button carried.
RemediateHook = Callable[[str, str, str, str, str], Awaitable[None]]
