"""The node side of doctor: an agent Ready on every GPU node, and one node read that works.

The agent states come from ``bot.probes.node_agent.find_agents`` (the very logic behind
NODE_AGENT_MISSING: not scheduled and which taint or label, Pending, crash-looping); the node read
is one ``observe`` through the configured transport, and what it could not read on this platform
(kernel log, kubelet state, the checkpoint, nvidia-smi) is named as degraded, not as broken.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.doctor.result import CheckLine
from bot.engine.gather.kubelet import kubelet_from_leases
from bot.engine.gather.node import agent_states, ssh_targets
from bot.errors import GpubotError, NodeProbeError, NotFoundError
from bot.kube.gpu import marks_gpu
from bot.kube.objects import Obj, meta_of, name_of
from bot.probes.clients import Clients
from bot.probes.node import NodeTransport, SshTransport
from bot.probes.node_access import decide
from bot.probes.node_agent import AGENT_SELECTOR, AgentState, AgentTransport
from bot.probes.observation import NodeObservation
from bot.settings import Settings


def gpu_nodes(nodes: list[Obj]) -> dict[str, Obj]:
    """The nodes whose own object says GPU machine (a GPU resource or label), by name."""
    by_name = {name_of(n): n for n in nodes}
    return {name: obj for name, obj in sorted(by_name.items()) if name and marks_gpu(obj)}


def _agent_fix(reasons: list[str], namespace: str) -> str:
    """One fix per kind of reason among ``reasons``, in the order an SRE would try them."""
    fixes = []
    if any("no gpubot-node DaemonSet" in r for r in reasons):
        fixes.append(f"install the node agent: nodeAgent.enabled: true (the DaemonSet lives in {namespace})")
    if any("taint" in r for r in reasons):
        fixes.append("tolerate the taint: add it under gpuNodes.tolerations in the chart's values")
    if any(r.startswith("not scheduled") and "taint" not in r and "DaemonSet in" not in r for r in reasons):
        fixes.append("add the node's GPU label to gpuNodes.extraNodeSelectorTerms, or label the node")
    if any(not r.startswith("not scheduled") for r in reasons):
        fixes.append(f"kubectl -n {namespace} describe pod -l app.kubernetes.io/name=gpubot-node (events: image "
                     "pull, runtimeClassName, hostPath); kubectl logs --previous for a crash loop")
    return "; ".join(fixes)


def agents_line(agents: Mapping[str, AgentState], namespace: str) -> CheckLine:
    bad = {n: a.reason for n, a in agents.items() if not a.ready}
    total = len(agents)
    if not total:
        return CheckLine("agents", "warn",
                         "no GPU node found: no node advertises a GPU resource or carries a GPU label",
                         fix="check the device plugin (kubectl get nodes -o yaml: status.allocatable)")
    if not bad:
        return CheckLine("agents", "ok", f"a gpubot-node agent is Ready on all {total} GPU nodes")
    shown = "; ".join(f"{n}: {why}" for n, why in list(bad.items())[:3])
    more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
    return CheckLine("agents", "fail", f"no Ready agent on {len(bad)} of {total} GPU nodes: {shown}{more}",
                     fix=_agent_fix(list(bad.values()), namespace),
                     details=tuple(f"{n}: {why}" for n, why in bad.items()))


def degraded(obs: NodeObservation) -> list[str]:
    """What this node read could not show, in the words a user needs."""
    out = []
    if obs.nvidia_smi_error:
        out.append(f"nvidia-smi: {obs.nvidia_smi_error}")
    elif not obs.gpus:
        out.append("nvidia-smi: no GPU listed")
    if not obs.kernel_log:
        # the reading's own note says what was tried and why each failed (the agent's mounts, SELinux)
        why = next((n.split(": ", 1)[1] for n in obs.notes if n.startswith("kernel log not readable")
                    and ": " in n), "")
        out.append("kernel log not readable (Xid and fallen-off-the-bus lines are not seen)"
                   + (f": {why}" if why else ""))
    if obs.kubelet in ("", "unknown"):
        out.append("kubelet state unknown (no systemctl answer)")
    if obs.checkpoint_error:
        out.append(f"device-plugin checkpoint: {obs.checkpoint_error}")
    if not obs.dev_nvidia:
        out.append("no /dev/nvidia* files seen")
    if obs.gpus and not obs.ecc_read:
        out.append("ECC counters not read")
    return out


def _smi_source(obs: NodeObservation, via: str) -> str:
    if obs.nvidia_smi_from:
        return obs.nvidia_smi_from
    if obs.driver_path == "operator":
        return "GPU Operator's driver root (/run/nvidia/driver)"
    return "agent's RuntimeClass" if "agent" in via else "host's PATH"


def reads_line(obs: NodeObservation, via: str) -> CheckLine:
    found = [
        f"{len(obs.gpus)} GPU(s)" + (f", driver {obs.driver_version}" if obs.driver_version else ""),
        f"nvidia-smi from the {_smi_source(obs, via)}",
        f"kernel log via {obs.kernel_log}" if obs.kernel_log else "",
        f"kubelet {obs.kubelet}" + (" (from its Lease)" if obs.kubelet_source == "lease" else "")
        if obs.kubelet not in ("", "unknown") else "",
    ]
    summary = ", ".join(f for f in found if f)
    missing = degraded(obs)
    head = f"node reads on {obs.node} ({via}, {obs.elapsed_s:.1f}s): {summary}"
    if not missing:
        return CheckLine("node-reads", "ok", head)
    return CheckLine("node-reads", "warn", f"{head}; degraded here: {'; '.join(missing)}",
                     fix="docs/node-reads.md says what each read needs on the node and per distribution"
                     + ("; the agent's kernel log: nodeAgent.kernelLog (the host's /var/log, read-only), or "
                        "dcgm-exporter's last Xid (config.dcgm_exporter)" if not obs.kernel_log and "agent" in via
                        else ""),
                     details=tuple(missing))


def _read_failed(exc: NodeProbeError, namespace: str) -> CheckLine:
    if exc.reason == "auth" and exc.via == "agent":
        fix = f"grant exec into the agents: the chart's gpubot-node-agent-exec Role in {namespace}"
    elif exc.reason == "auth":
        fix = "install the bot's public key on the node (ssh_key_path), for ssh_user"
    elif exc.reason == "host-key":
        fix = "add the node's host key to ssh_known_hosts (ssh-keyscan, checked out of band)"
    elif exc.reason == "timeout":
        fix = "the node did not answer in time: check its load and the network path; raise ssh_deadline_s"
    else:
        fix = "rerun with -v; check the node and the transport"
    return CheckLine("node-reads", "fail", f"node reads fail: {exc.user_message}", fix=fix)


async def check_nodes(clients: Clients, settings: Settings, nodes: list[Obj]) -> list[CheckLine]:
    """The agents (``node_access: agent``, or ``auto`` where they run), then one node read through
    the transport the settings choose (``auto`` decided as the diagnoses decide it)."""
    gpus = gpu_nodes(nodes)
    ns = settings.namespace
    transport: NodeTransport
    decision = await decide(settings, settings.cluster(None), clients.reader)
    if decision.transport == "none":
        return [CheckLine("node-reads", "warn", decision.why,
                          fix="install the chart's node agent (nodeAgent.enabled), or configure SSH (ssh_key_path)")]
    if decision.transport == "agent":
        try:
            agents = await agent_states(clients.reader, ns, gpus, decision.agent_pods)
        except GpubotError as exc:
            return [CheckLine("agents", "unknown", f"cannot list the node agents in {ns}: {exc.user_message}",
                              fix=f"grant list pods in {ns} and list daemonsets (the chart's roles do)")]
        lines = [agents_line(agents, ns)]
        runtime = await runtime_class_line(clients, ns)
        lines += [runtime] if runtime is not None else []
        ready = [n for n, a in agents.items() if a.ready]
        if clients.exec is None or not ready:
            lines.append(CheckLine("node-reads", "skip", "no Ready agent to read a node through"))
            return lines
        transport, node, via = AgentTransport(clients.exec.run_read, ns, agents), ready[0], "through its agent"
    else:
        lines = []
        targets, failed = ssh_targets(settings, settings.cluster(None), gpus)
        if not targets:
            why = next(iter(failed.values())).user_message if failed else "no GPU node found"
            return [CheckLine("node-reads", "skip", f"no node to read over SSH: {why}")]
        transport, node, via = SshTransport(targets), sorted(targets)[0], "over SSH"
    try:
        obs = await transport.observe(node, deadline=settings.ssh_deadline_s)
    except NodeProbeError as exc:
        lines.append(_read_failed(exc, ns))
        return lines
    await kubelet_from_leases(clients.reader, gpus, {node: obs})
    lines.append(reads_line(obs, via))
    return lines


async def runtime_class_line(clients: Clients, namespace: str) -> CheckLine | None:
    """The agent DaemonSet's RuntimeClass exists (its pods are never created without it, and
    nvidia-smi reaches the agent only through it); None when there is no agent DaemonSet."""
    try:
        daemonsets = [d for d in await clients.reader.list_daemonsets(label_selector=AGENT_SELECTOR)
                      if meta_of(d).get("namespace") == namespace]
    except GpubotError:
        return None  # the agents line already says the agents could not be listed
    if not daemonsets:
        return None
    template = ((daemonsets[0].get("spec") or {}).get("template") or {}).get("spec") or {}
    name = str(template.get("runtimeClassName") or "")
    if not name:
        return CheckLine("runtime-class", "ok", "the agent runs with the node's default runtime: nvidia-smi "
                         "reaches it only where that runtime is NVIDIA's")
    try:
        found = await clients.reader.get_object("RuntimeClass", name)
    except NotFoundError:
        return CheckLine("runtime-class", "fail", f"RuntimeClass {name} does not exist: the agent's pods cannot be "
                         "created, and nvidia-smi cannot reach the agent without it",
                         fix="install the GPU Operator or the NVIDIA container toolkit's RuntimeClass, or set "
                             "nodeAgent.runtimeClassName to one `kubectl get runtimeclass` lists (\"\" where "
                             "NVIDIA's runtime is containerd's default)")
    except GpubotError as exc:
        return CheckLine("runtime-class", "unknown", f"cannot read RuntimeClass {name}: {exc.user_message}",
                         fix="grant get runtimeclasses (the chart's gpubot-readonly ClusterRole does)")
    return CheckLine("runtime-class", "ok", f"the agent reaches nvidia-smi through RuntimeClass {name} "
                     f"(handler {found.get('handler', '?')})")
