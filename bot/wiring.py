"""Everything ``gpubot serve`` runs, built from the settings in one place.

settings → the diagnosis service (``bot.service.Service``: runbooks, per-cluster clients, watch
cache, SSH pool) → the remediation service, which borrows that service's cluster clients → its
Slack view (``SlackRemediation``) → the Bolt app → the server (Socket Mode or HTTP). One Web API
client serves the app and the remediation messages. ``bot.server.serve`` runs what this builds.

A diagnosis service given from outside (a stand-in, in tests) comes without cluster clients: the
bot then offers no buttons, unless ``clients`` are given too. This module only builds and orders;
it holds no Slack, diagnosis or remediation logic.
"""

from __future__ import annotations

from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import Metrics
from bot.remediation import ClusterClients, RemediationService
from bot.remediation.sqlite_requests import SqliteSeenRequests
from bot.settings import Settings
from bot.slack.app import SlackBot, create_app
from bot.slack.hooks import DiagnosisService
from bot.slack.remediation import SlackRemediation
from bot.slack.transport import SlackServer
from bot.slack.web import new_web_client


@dataclass
class Bot:
    """The parts of one running bot, built but not started."""

    settings: Settings
    service: DiagnosisService
    slack: SlackBot
    server: SlackServer
    #: the Web API client the app and the remediation messages share
    web: AsyncWebClient
    #: the remediation loop as Slack shows it; ``None`` when there are no cluster clients to act with
    remediation: SlackRemediation | None = None
    #: Slack requests seen by any replica (in the state file); ``None`` without remediation
    seen: SqliteSeenRequests | None = None

    async def start(self) -> None:
        """Check the token and warm the service, report runs a restart cut off, then listen."""
        await self.slack.start()
        if self.remediation is not None:
            await self.remediation.start()
        await self.server.start()

    async def close(self) -> None:
        """After ``server.stop``: release the clients (the service's and the Web API session)."""
        await self.service.close()
        if self.seen is not None:
            self.seen.close()
        session = getattr(self.web, "session", None)
        if session is not None and not session.closed:
            await session.close()


def build_bot(
    settings: Settings, *, service: DiagnosisService | None = None, clients: ClusterClients | None = None
) -> Bot:
    """Build the bot for ``settings``; ``service`` and ``clients`` replace the diagnosis service
    and the cluster clients the remediation service borrows (tests)."""
    web = new_web_client(settings)
    if service is None:
        from bot.service import Service

        service = Service(settings, use_cache=True, keep_connections=True)
        clients = clients or service.clients
    remediation = SlackRemediation(RemediationService(settings, clients), web) if clients is not None else None
    # with remediation on, the state file is shared by every replica: so is the memory of retries
    seen = SqliteSeenRequests(settings.state_path) if remediation is not None else None
    slack = create_app(
        settings,
        service,
        metrics=Metrics(),
        offers=remediation,
        on_remediate=remediation.on_click if remediation is not None else None,
        client=web,
        # shutdown waits for a running action up to its own maximum, not the diagnoses' grace
        remediation_grace_s=remediation.remediation.max_action_s if remediation is not None else None,
        seen=seen,
    )
    return Bot(settings, service, slack, SlackServer(slack, settings), web, remediation, seen)
