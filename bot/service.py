"""The application service: runs one validated invocation and returns a Report.

The CLI and the Slack app both call ``Service.run``; neither holds diagnosis logic. The service
owns the per-cluster clients (API reader, exec) and the loaded runbooks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from bot.commands import Invocation, Surface, command_prefix, help_lines
from bot.engine.facts import Facts
from bot.engine.gather import Sources
from bot.engine.runbook_dir import load_with_overrides
from bot.engine.runbooks import RunbookSet, list_guides, render_guide_text
from bot.engine.runner import run_diagnosis
from bot.errors import UsageError
from bot.names import shown
from bot.probes.cache import WatchCache
from bot.probes.exec import PodExec
from bot.probes.kube import KubeReader, KubeReads
from bot.probes.kube_client import new_api_client
from bot.probes.ssh_pool import SshPool
from bot.report import Report
from bot.settings import Settings

log = logging.getLogger(__name__)

@dataclass
class _ClusterClients:
    reads: KubeReads
    reader: KubeReader
    exec: PodExec
    cache: WatchCache | None = None


class Service:
    """Holds what stays warm between commands: runbooks and per-cluster clients."""

    def __init__(
        self,
        settings: Settings,
        *,
        runbooks: RunbookSet | None = None,
        use_cache: bool = False,
        keep_connections: bool = False,
    ) -> None:
        self.settings = settings
        #: the long-running bot keeps each node's SSH connection for the next question
        self.ssh_pool = SshPool(idle_s=settings.ssh_idle_s) if keep_connections else None
        #: the long-running bot reads through the watch-fed cache; the one-shot CLI never does
        self.use_cache = use_cache and settings.cache_enabled
        # the packaged runbooks, with the files of ``runbook_dir`` (if set) replacing or adding to them
        self.runbooks = runbooks if runbooks is not None else load_with_overrides(settings.runbook_dir)
        self._clients: dict[str, _ClusterClients] = {}
        self._ready = False

    async def start(self) -> None:
        """Create the default cluster's clients so the first command does not pay for it."""
        self._clients_for(self.settings.cluster(None).name)
        self._ready = True

    def ready(self) -> bool:
        return self._ready

    def _clients_for(self, cluster_name: str) -> _ClusterClients:
        clients = self._clients.get(cluster_name)
        if clients is None:
            cluster = self.settings.cluster(cluster_name)
            reader = KubeReader(
                new_api_client(cluster),
                page_size=self.settings.page_size,
                timeout=self.settings.api_timeout_s,
            )
            clients = _ClusterClients(reads=reader, reader=reader, exec=PodExec(new_api_client(cluster)))
            if self.use_cache:
                cache = WatchCache(
                    new_api_client(cluster),
                    reader,
                    staleness_s=self.settings.cache_staleness_s,
                    page_size=self.settings.page_size,
                )
                cache.start()  # reads fall back to the API reader until it has synced
                clients.reads, clients.cache = cache, cache
            self._clients[cluster_name] = clients
        return clients

    def cache_for(self, cluster_name: str) -> WatchCache | None:
        """The watch-fed cache of a cluster, when this service uses one (benchmarks wait on it)."""
        return self._clients_for(self.settings.cluster(cluster_name).name).cache

    def reads_for(self, cluster_name: str) -> KubeReader:
        """The API reader of a cluster (benchmarks read its request counters)."""
        return self._clients_for(self.settings.cluster(cluster_name).name).reader

    async def run(self, inv: Invocation) -> Report:
        """Run one invocation; diagnosis problems come back inside the report, never as exceptions."""
        if inv.command == "help":
            return Report(command="help", target={}, text=self.help_text(inv.surface))
        if inv.command == "runbook":
            return self._runbook(inv)
        cluster = self.settings.cluster(inv.cluster or None)
        clients = self._clients_for(cluster.name)
        runbook = self.runbooks.diagnosis(inv.command)
        facts = Facts(inv, tables=runbook.tables, ssh_concurrency=self.settings.ssh_concurrency)
        sources = Sources(
            kube=clients.reads,
            settings=self.settings,
            cluster=cluster,
            exec_fn=clients.exec.run,
            ssh_pool=self.ssh_pool,
        )
        started = time.perf_counter()
        report = await run_diagnosis(
            runbook,
            self.runbooks,
            facts,
            sources,
            command_prefix=command_prefix(inv.surface),
            strict=self.settings.strict_checks,
        )
        report.cluster = cluster.name
        report.elapsed_ms = int((time.perf_counter() - started) * 1000)
        return report

    def help_text(self, surface: Surface = "cli") -> str:
        """``/gpu help`` or ``gpubot help``: the commands offered there (from the command table),
        then the guides."""
        lines = help_lines(surface)
        lines += ["", f"Guides ({command_prefix(surface)} runbook NAME):"]
        lines += [f"  {name}: {summary}" for name, summary in list_guides(self.runbooks)]
        return "\n".join(lines)

    def _runbook(self, inv: Invocation) -> Report:
        if not inv.topic:
            lines = [f"Runbooks ({command_prefix(inv.surface)} runbook NAME):"]
            lines += [f"  {name}: {summary}" for name, summary in list_guides(self.runbooks)]
            lines += [f"  {c} (diagnosis): {rb.summary}" for c, rb in sorted(self.runbooks.diagnoses.items())]
            return Report(command="runbook", target={}, text="\n".join(lines))
        guide = self.runbooks.guides.get(inv.topic)
        if guide is None:
            names = ", ".join(sorted(self.runbooks.guides))
            raise UsageError(f"unknown runbook {shown(inv.topic)}; available: {names}")
        return Report(command="runbook", target={"topic": inv.topic}, text=render_guide_text(guide))

    async def close(self) -> None:
        for clients in self._clients.values():
            if clients.cache is not None:
                await asyncio.to_thread(clients.cache.close)
            clients.reader.close()
        self._clients.clear()
        if self.ssh_pool is not None:
            await self.ssh_pool.close()
