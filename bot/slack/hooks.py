"""The interfaces the Slack layer is given, so it stays a view.

The app factory receives a ``DiagnosisService`` (``bot.service.Service`` in production, a fake in
some tests) and, optionally, the remediation hooks the confirmation layer provides. Nothing here
runs a diagnosis or an action; these are only the shapes the Slack layer calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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


@dataclass(frozen=True)
class OfferButton:
    """What one remediation button carries and warns about: plain data from the remediation layer."""

    #: the opaque offer id the button's value carries (the whole capability; nothing else is trusted)
    offer_id: str
    #: the action's own hazards, shown in Slack's confirmation dialog before anyone can confirm
    blast_radius: str = ""


@dataclass(frozen=True)
class PostedOffers:
    """Where a report carrying offer buttons landed, so the offers can be found (and edited) later."""

    channel: str
    #: ``ts`` of the report message itself
    message_ts: str
    #: the thread it was posted in (the "diagnosing…" placeholder); ``None`` if top level
    thread_ts: str | None
    #: the blocks as posted (the starting point for editing one button)
    blocks: Sequence[Mapping[str, Any]]
    #: the offer ids its buttons carry
    offer_ids: tuple[str, ...]


class RemediationOffers(Protocol):
    """Where the answer gets its remediation buttons (``bot.slack.remediation.SlackRemediation``)."""

    async def offer_remediation(
        self, report: Report, finding: Finding, remediation: Remediation, context: OfferContext
    ) -> OfferButton | None:
        """Register one offered fix; its button, or ``None`` to list it without one."""
        ...

    async def offers_posted(self, posted: PostedOffers) -> None:
        """Told once per report message that carries buttons, after Slack answered with its ``ts``.

        A failure here never fails the answer.
        """
        ...


ClickKind = Literal["run", "approve", "deny"]


@dataclass(frozen=True)
class Click:
    """One click on a remediation button, as Slack reported it (after the ack).

    ``kind``: ``run`` is the report's own button; ``approve`` and ``deny`` are the buttons of an
    approval request, which act on the same offer from another message.
    """

    #: the opaque offer id the button carried (untrusted: anyone can forge a payload)
    offer_id: str
    user_id: str
    channel: str
    #: ``ts`` of the clicked message
    message_ts: str
    #: where an answer only the clicker sees goes
    response_url: str
    #: the clicked message's blocks as Slack sent them, so one button can be replaced and the
    #: rest kept; ``None`` when Slack sent none
    blocks: Sequence[Mapping[str, Any]] | None = None
    #: the thread the message is in; ``None`` when it is top level
    thread_ts: str | None = None
    kind: ClickKind = "run"


#: Called (after the ack) when someone clicks a remediation button.
ClickHook = Callable[[Click], Awaitable[None]]
