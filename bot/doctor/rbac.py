"""Is every API call gpubot makes allowed? One line per component, from ``bot.doctor.needs``.

The permissions come from the code (``needs``), the answers from the API server
(``access.can_i``): a refused one names the permission, the code that needs it and the
``kubectl auth can-i`` line that asks the same question.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes.client import ApiClient

from bot.doctor.access import ReviewError, can_i, kubectl_can_i
from bot.doctor.kube_calls import Perm
from bot.doctor.needs import EXEC_RESOURCE, needs
from bot.doctor.result import CheckLine
from bot.settings import Settings
from bot.state.opening import state_on_cluster

#: the chart's service account in its namespace is named after the release; this is its default
SERVICE_ACCOUNT = "gpubot"


def _scope(namespace: str) -> str:
    return f"in namespace {namespace}" if namespace else "cluster-wide"


def _line(
    name: str,
    what: str,
    asks: Mapping[Perm, str],
    answers: Mapping[tuple[Perm, str], bool],
    places: Mapping[Perm, list[str]],
    fix: str,
    service_account: str,
) -> CheckLine:
    refused = sorted(p for p, ns in asks.items() if not answers[(p, ns)])
    if not refused:
        return CheckLine(name, "ok", f"{what}: all {len(asks)} permissions allowed")
    shown = ", ".join(f"{p.verb} {p.resource} {_scope(asks[p])}" for p in refused[:4])
    more = f" (+{len(refused) - 4} more)" if len(refused) > 4 else ""
    first = refused[0]
    details = tuple(
        f"{p} {_scope(asks[p])}: needed by {', '.join(places.get(p, [])[:2]) or 'gpubot'}" for p in refused
    )
    ask = kubectl_can_i(first, asks[first], service_account)
    return CheckLine(name, "fail", f"{what}: {len(refused)} of {len(asks)} refused: {shown}{more}",
                     fix=f"{fix}; ask as the bot: {ask}", details=details)


async def check_rbac(api: ApiClient, settings: Settings, *, timeout: float) -> list[CheckLine]:
    """The read-only set always; exec into the agents, the state objects and the remediation
    set when the settings use them; cluster-wide exec (``nvml``, ``verify``) as information."""
    found = needs()
    ns = settings.namespace
    account = f"{ns}:{SERVICE_ACCOUNT}"
    sets: list[tuple[str, str, dict[Perm, str], dict[Perm, list[str]], str]] = [
        ("rbac.reads", "read-only API access", {p: "" for p in found.reads}, found.reads,
         "the chart's gpubot-readonly ClusterRole grants each of these: upgrade to this version's chart, "
         "or bind that role to the bot's service account"),
    ]
    if settings.node_access != "ssh":  # agent, or auto (the agent wherever its pods run)
        sets.append(("rbac.agent-exec", f"exec into the node agents in {ns}", {p: ns for p in found.exec},
                     found.exec, f"the chart's gpubot-node-agent-exec Role grants it in {ns} (nodeAgent.enabled)"))
    if state_on_cluster(settings):
        sets.append(("rbac.state", f"gpubot's own state objects in {ns}", {p: ns for p in found.state},
                     found.state, f"the chart's gpubot-state Role grants these in {ns} (config.state: kubernetes)"))
    if not settings.dry_run:
        asks = {p: (ns if (p.group, p.resource) == EXEC_RESOURCE else "") for p in found.remediation}
        sets.append(("rbac.remediation", "remediation (the confirmed fixes)", asks, found.remediation,
                     "the chart's gpubot-remediation ClusterRole and gpubot-actuator-exec Role grant these "
                     "(remediation.enabled: true); or set dry_run: true"))
    user_exec = {p: "" for p in found.exec}
    every = [(p, n) for _, _, asks, _, _ in sets for p, n in asks.items()] + list(user_exec.items())
    try:
        answers = await can_i(api, list(dict.fromkeys(every)), timeout=timeout)
    except ReviewError as exc:
        return [CheckLine("rbac", "unknown", f"could not ask the API server what gpubot may do: {exc}",
                          fix="check that the API server is reachable; then rerun gpubot doctor")]
    lines = [_line(name, what, asks, answers, places, fix, account) for name, what, asks, places, fix in sets]
    if settings.dry_run:
        lines.append(CheckLine("rbac.remediation", "skip", "remediation is off (dry_run): its permissions not checked"))
    if all(answers[(p, "")] for p in user_exec):
        lines.append(CheckLine("rbac.container-probes", "ok", "exec into user containers (nvml, verify) allowed"))
    else:
        lines.append(CheckLine("rbac.container-probes", "skip",
                               "exec into user containers not granted: nvml and verify will say so "
                               "(opt-in: containerProbes.enabled)"))
    return lines
