"""Run every doctor check against one configured cluster (or a fresh simulator of a scenario).

The order is the order of dependence: the API answers, gpubot may make its calls, its state CRDs
exist, its agents run, a node read works, then Slack and Alertmanager. When the API server does not
answer, the cluster checks are not run (and say so), but Slack and the alerts still are.
"""

from __future__ import annotations

import time
from dataclasses import replace

from bot.doctor.cluster import check_api, check_crds
from bot.doctor.nodes import check_nodes
from bot.doctor.rbac import check_rbac
from bot.doctor.result import CheckLine, DoctorReport
from bot.doctor.slack import check_alerts, check_slack
from bot.errors import ConfigError, GpubotError
from bot.probes.clients import KubeClients
from bot.settings import Settings
from bot.state.opening import state_on_cluster


def _subject(settings: Settings, cluster: str) -> str:
    c = settings.cluster(cluster or None)
    where = "in-cluster" if c.in_cluster else f"context {c.context or '(current)'}"
    return (f"cluster {c.name} ({where}), namespace {settings.namespace}, node access {settings.node_access}, "
            f"state {settings.state}, remediation {'off (dry_run)' if settings.dry_run else 'on'}")


async def _cluster_checks(settings: Settings, cluster: str) -> list[CheckLine]:
    clients = KubeClients(settings)
    try:
        try:
            c = clients.for_cluster(cluster)
        except ConfigError as exc:  # no kubeconfig, an unknown context: Slack is still worth checking
            return [CheckLine("api", "unknown", f"no cluster to check: {exc.user_message}",
                              fix="point at one: --context CTX, KUBECONFIG, or clusters: in the settings file")]
        timeout = settings.api_timeout_s
        api = await check_api(c.api, timeout=timeout)
        if api.status != "ok":
            return [api]
        lines = [api, *await check_rbac(c.api, settings, timeout=timeout)]
        if state_on_cluster(settings):
            lines.append(await check_crds(c.api, timeout=timeout))
        try:
            nodes = await c.reader.list_nodes()
        except GpubotError as exc:
            lines.append(CheckLine("agents", "unknown", f"cannot list the nodes: {exc.user_message}",
                                   fix="grant list nodes (the chart's gpubot-readonly ClusterRole does)"))
            return lines
        lines += await check_nodes(c, replace(settings, clusters=(settings.cluster(cluster or None),)), nodes)
        return lines
    finally:
        await clients.close()


async def run_doctor(settings: Settings, *, cluster: str = "") -> DoctorReport:
    """Every check, in order; the report's ``exit_code`` is the command's."""
    started = time.monotonic()
    report = DoctorReport(subject=_subject(settings, cluster))
    report.add(*await _cluster_checks(settings, cluster))
    report.add(*await check_slack(settings))
    report.add(check_alerts(settings))
    report.elapsed_s = time.monotonic() - started
    return report


async def run_doctor_on_scenario(settings: Settings, scenario: str) -> DoctorReport:
    """Doctor against a fresh simulator of ``scenario``, with the user's settings for what the
    simulator does not stand in for (Slack, alerts, node access, state, remediation)."""
    from bot.sim.cluster import SimCluster

    keep = ("slack_bot_token", "slack_app_token", "slack_signing_secret", "slack_mode", "slack_api_url",
            "alerts_token", "alerts_channel", "node_access", "state", "dry_run", "ssh_deadline_s", "api_timeout_s")
    async with SimCluster.from_file(scenario) as sim:
        return await run_doctor(sim.settings(**{k: getattr(settings, k) for k in keep}))
