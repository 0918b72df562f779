"""Everything ``gpubot serve`` runs, built from the settings in one place.

settings → the diagnosis service (``bot.service.Service``: runbooks, per-cluster clients, watch
cache, SSH pool) → the remediation service, which borrows that service's cluster clients → its
Slack view (``SlackRemediation``) → the Bolt app → the server (Socket Mode or HTTP), and one
watcher per enabled ``watch`` entry. One Web API client serves the app, the remediation messages
and the watch's posts, and one ``Metrics`` registry counts for all. ``bot.server.serve`` runs what
this builds.

Where the shared state lives follows ``settings.state`` (``bot.state.open_state``): the SQLite
file (one replica, always leader) or the Kubernetes API of the default cluster with leader
election on a Lease, so several replicas can serve one Slack app.

A diagnosis service given from outside (a stand-in, in tests) comes without cluster clients: the
bot then offers no buttons, unless ``clients`` are given too. This module only builds and orders;
it holds no Slack, diagnosis or remediation logic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import Metrics
from bot.proactive import ProblemStore, Snoozer, Watcher
from bot.proactive.alerts import AlertDesk
from bot.proactive.fleet import FleetReads
from bot.proactive.watcher import ActingOn
from bot.probes.clients import KubeClients
from bot.probes.kube import KubeReads
from bot.remediation import ClusterClients, RemediationService
from bot.settings import Settings
from bot.slack.alert_route import SlackAlertPoster, add_alert_route
from bot.slack.app import SlackBot, create_app
from bot.slack.hooks import DiagnosisService
from bot.slack.remediation import SlackRemediation
from bot.slack.transport import SlackServer
from bot.slack.watch_buttons import register_watch_buttons
from bot.slack.watch_notifier import SlackWatchNotifier
from bot.slack.web import CountingWebClient, new_web_client
from bot.state.contracts import Leader, SeenRequests
from bot.state.leadership import SoleLeader
from bot.state.opening import open_state


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
    #: one per enabled ``watch`` entry; ``serve`` sweeps each on its own interval
    watchers: list[Watcher] = field(default_factory=list)
    #: Slack requests seen by any replica (the state file, or the API); ``None`` without remediation
    seen: SeenRequests | None = None
    #: who runs the singletons; ``serve`` runs sweeps and watches only while it leads
    leader: Leader = field(default_factory=SoleLeader)
    #: further housekeeping the leader runs with the offer sweep
    sweeps: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    #: the Alertmanager receiver's desk (``POST /alerts``); ``None`` when ``alerts_token`` is unset
    alert_desk: AlertDesk | None = None

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
        if isinstance(self.web, CountingWebClient):
            await self.web.aclose()


def build_bot(
    settings: Settings, *, service: DiagnosisService | None = None, clients: ClusterClients | None = None
) -> Bot:
    """Build the bot for ``settings``; ``service`` and ``clients`` replace the diagnosis service
    and the cluster clients the remediation service borrows (tests)."""
    metrics = Metrics()
    web = new_web_client(settings, metrics=metrics)
    if service is None:
        from bot.service import Service

        service = Service(settings, use_cache=True, keep_connections=True)
        clients = clients or service.clients
    shared = open_state(settings, clients)
    remediation = (
        SlackRemediation(
            RemediationService(settings, clients, state=shared.actions()), web, metrics=metrics
        )
        if clients is not None
        else None
    )
    # with remediation on, the state is shared by every replica: so is the memory of retries
    seen = shared.seen if clients is not None else None
    slack = create_app(
        settings,
        service,
        metrics=metrics,
        offers=remediation,
        on_remediate=remediation.on_click if remediation is not None else None,
        client=web,
        # shutdown waits for a running action up to its own maximum, not the diagnoses' grace
        remediation_grace_s=remediation.remediation.max_action_s if remediation is not None else None,
        seen=seen,
    )
    watchers = build_watchers(
        settings, service, web, shared.problems, is_leader=shared.leader.is_leader,
        acting=remediation.remediation.acting_on if remediation is not None else None,
    )
    if watchers:
        register_watch_buttons(slack, Snoozer(watchers[0].store))
    server = SlackServer(slack, settings)
    desk = None
    if settings.alerts_token:
        cluster = settings.cluster(settings.alerts_cluster or None).name
        desk = AlertDesk(
            shared.alert_groups,
            service,
            SlackAlertPoster(web),
            channel=settings.alerts_channel,
            cluster=cluster,
            is_leader=shared.leader.is_leader,
        )
        add_alert_route(server.web_app, desk, settings.alerts_token, slack.tasks)
    return Bot(
        settings,
        service,
        slack,
        server,
        web,
        remediation,
        watchers,
        seen,
        shared.leader,
        shared.sweeps,
        alert_desk=desk,
    )


def build_watchers(
    settings: Settings,
    service: DiagnosisService,
    web: AsyncWebClient,
    problems: ProblemStore,
    *,
    is_leader: Callable[[], bool] = lambda: True,
    acting: ActingOn | None = None,
) -> list[Watcher]:
    """One watcher per enabled ``watch`` entry, sharing one memory of problems (``problems``: the
    state file's tables, or records on the Kubernetes API); only while ``is_leader()`` do they read
    and post (a replicated bot passes its Lease's check)."""
    enabled = [w for w in settings.watch if w.enabled]
    if not enabled:
        return []
    store = problems
    notifier = SlackWatchNotifier(web)
    limit = settings.watch_channel_posts_per_hour
    kube = getattr(service, "clients", None)  # the real service's per-cluster clients (a stand-in has none)
    fleet = FleetReads(service)  # one fleet read per cluster, whatever number of watches sweep it

    def reads_of(cluster: str) -> Callable[[], KubeReads] | None:
        return (lambda: kube.for_cluster(cluster).reads) if isinstance(kube, KubeClients) else None

    return [
        Watcher(
            w,
            service,
            store,
            notifier,
            posts_per_hour=limit,
            reads=reads_of(w.cluster),
            is_leader=is_leader,
            fleet=fleet,
            acting=acting,
        )
        for w in enabled
    ]
