"""The application service: runs one validated invocation and returns a Report.

The CLI and the Slack app both call ``Service.run``; neither holds diagnosis logic. The service
owns the loaded runbooks and the per-cluster clients (``bot.probes.clients.KubeClients``), which ``serve``
also lends to the remediation service. An invocation carrying an ``identity`` (per-user authority)
reads through clients that impersonate it; what that identity may not read is reported as skipped.
"""

from __future__ import annotations

import logging
import time

from bot.aio import in_daemon_thread
from bot.commands import Invocation, Surface, command_prefix
from bot.engine.checks import builtin_checks
from bot.engine.facts import Facts
from bot.engine.gather import NO_EXEC, Sources
from bot.engine.help_text import help_text, runbook_report
from bot.engine.progress import Progress, no_progress
from bot.engine.runbook_dir import load_with_overrides
from bot.engine.runbooks import RunbookSet
from bot.engine.runner import run_diagnosis
from bot.errors import KubeApiError
from bot.exit_heap import spent
from bot.probes.clients import Clients, KubeClients
from bot.probes.failed_reads import FailedReads
from bot.probes.ssh_pool import SshPool
from bot.report import Report
from bot.settings import ClusterConfig, Settings

log = logging.getLogger(__name__)

#: why container reads are skipped under per-user authority
NO_EXEC_AS_USER = "not run with per-user authority (exec cannot impersonate; it would read as the bot)"


class Service:
    """Holds what stays warm between commands: runbooks and per-cluster clients."""

    def __init__(
        self,
        settings: Settings,
        *,
        runbooks: RunbookSet | None = None,
        use_cache: bool = False,
        keep_connections: bool = False,
        clients: KubeClients | None = None,
    ) -> None:
        self.settings = settings
        #: the long-running bot keeps each node's SSH connection for the next question
        self.ssh_pool = SshPool(idle_s=settings.ssh_idle_s) if keep_connections else None
        #: nodes whose last read timed out, read first next time (``Sources.slow_nodes``)
        self.slow_nodes: set[str] | None = set() if keep_connections else None
        #: the long-running bot reads through the watch-fed cache; the one-shot CLI never does
        #: (``clients``: ones the caller started building, the one-shot CLI's: see ``bot.cli``)
        self.clients = clients or KubeClients(settings, use_cache=use_cache and settings.cache_enabled)
        # the packaged runbooks, with the files of ``runbook_dir`` (if set) replacing or adding to them
        self.runbooks = runbooks if runbooks is not None else load_with_overrides(settings.runbook_dir)
        self._ready = False

    async def start(self) -> None:
        """Create the default cluster's clients and import the checks so the first command does
        not pay for them: with the runbooks validated by an earlier process (runbook_cache) the
        ~55 check modules are first imported by a diagnosis, on the event loop that acks Slack."""
        self.clients.for_cluster("")
        builtin_checks()
        self._ready = True

    def ready(self) -> bool:
        return self._ready

    async def run(
        self,
        inv: Invocation,
        *,
        deadline: float | None = None,
        progress: Progress = no_progress,
        started: float | None = None,
    ) -> Report:
        """Run one invocation; diagnosis problems come back inside the report, never as exceptions.

        ``deadline`` (``time.monotonic()``) is when the answer is due; by default the command's
        deadline from now. The CLI passes its process's start plus the deadline. ``progress`` is
        told what is being read as it happens (the CLI's progress line). ``started``
        (``time.monotonic()``): when the asker began to wait, which the report's elapsed time
        counts from (default: now); the CLI passes its process's start, as it has already asked
        for the node list by now (``bot.cli``).
        """
        if inv.command == "help":
            return Report(command="help", target={}, text=self.help_text(inv.surface))
        if inv.command == "runbook":
            return self._runbook(inv)
        # the deadline and the elapsed time count from here at the latest: building a cluster's
        # clients (seconds on a loaded machine, the first time; a kubeconfig exec plugin that
        # hangs) is part of what the asker waits for
        begun = time.monotonic() if started is None else started
        if deadline is None:
            deadline = time.monotonic() + self.settings.command_deadline_s
        if inv.command == "pending":  # many why-pending diagnoses sharing their reads (bot.pending)
            from bot.pending.run import run_pending

            return await run_pending(self, inv, deadline=deadline, progress=progress)
        progress("connecting to the cluster")
        cluster, sources = await self.sources(inv, deadline, progress=progress)
        runbook = self.runbooks.diagnosis(inv.command)
        facts = Facts(
            inv,
            tables=runbook.tables,
            ssh_concurrency=self.settings.ssh_concurrency,
            deadline=deadline,
        )
        report = await run_diagnosis(
            runbook,
            self.runbooks,
            facts,
            sources,
            command_prefix=command_prefix(inv.surface),
            strict=self.settings.strict_checks,
        )
        report.cluster = cluster.name
        report.read_as = str(inv.identity) if inv.identity is not None else ""
        report.elapsed_ms = int((time.monotonic() - begun) * 1000)
        spent(facts)  # freed after the caller has the report (kept to the exit in a one-shot process)
        return report

    async def sources(
        self, inv: Invocation, deadline: float, *, progress: Progress = no_progress
    ) -> tuple[ClusterConfig, Sources]:
        """The cluster ``inv`` names and where its diagnoses read from (every read failing with
        the client's error when no client could be built by the deadline)."""
        cluster = self.settings.cluster(inv.cluster or None)
        clients = await self._clients(cluster.name, inv, deadline)
        if isinstance(clients, KubeApiError):  # no client by the deadline: every read is unknown
            return cluster, Sources(kube=FailedReads(clients), settings=self.settings, cluster=cluster)
        return cluster, Sources(
            kube=clients.reads,
            settings=self.settings,
            cluster=cluster,
            exec_fn=clients.exec.run if clients.exec is not None else None,
            exec_unavailable=NO_EXEC_AS_USER if inv.identity is not None else NO_EXEC,
            ssh_pool=self.ssh_pool,
            node_exec=clients.exec.run_read if clients.exec is not None else None,
            slow_nodes=self.slow_nodes,
            progress=progress,
        )

    async def _clients(self, cluster: str, inv: Invocation, deadline: float) -> Clients | KubeApiError:
        """The cluster's clients, built within the deadline (a kubeconfig exec plugin runs here
        and may never return); past it, the error every read of this command reports."""
        known = self.clients.cached(cluster, identity=inv.identity)
        if known is not None:
            return known
        if deadline <= time.monotonic():
            late = "not read: the command's deadline had passed before the API could be asked (a slow start?)"
            return KubeApiError(f"cluster {cluster}: {late}", kind="timeout", detail=late)
        try:
            return await in_daemon_thread(
                lambda: self.clients.for_cluster(cluster, identity=inv.identity), deadline - time.monotonic()
            )
        except TimeoutError:
            detail = "the client could not be set up within the command's deadline (kubeconfig credential plugin?)"
            return KubeApiError(f"cluster {cluster}: {detail}", kind="timeout", detail=detail)

    def help_text(self, surface: Surface = "cli") -> str:
        return help_text(self.runbooks, surface)

    def _runbook(self, inv: Invocation) -> Report:
        return runbook_report(self.runbooks, inv)

    async def close(self) -> None:
        await self.clients.close()
        if self.ssh_pool is not None:
            await self.ssh_pool.close()
