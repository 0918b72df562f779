"""What the simulated node agent's container answers where it is not the host's shell.

On a real node the unprivileged agent has no ``journalctl``, cannot read ``/dev/kmsg``, and sees
nvidia-smi only where a RuntimeClass puts it on its PATH. A scenario says so per node
(``agent_kernel_log``, ``agent_driver``); then the plain reads fail as they would there, and the
agent's own reads (``bot.probes.agent_reads``) answer from the node's facts, printed by the agent's
own formatter (``bot.agent.kernel_log.render``), so the bot reads exactly what the agent prints.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.agent.kernel_log import JOURNAL_FILES, LOG_FILES, KernelLogRead, journal_line, render
from bot.probes.agent_reads import AGENT_KERNEL_LOG, AGENT_SMI, AGENT_SMI_WHERE, OPERATOR_DRIVER_ROOT
from bot.probes.gpu_health import KERNEL_LOG, KERNEL_LOG_DMESG
from bot.sim.nvidia_smi import render as render_smi
from bot.sim.scenario import NodeFacts

#: (stdout, stderr, exit status)
Answer = tuple[str, str, int]
#: the host driver directory the simulated agent finds nvidia-smi in (GKE on COS)
SIM_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"
_NO_JOURNAL = "journal /var/log/journal: No such file or directory"
_NO_FILES = "file /var/log/kern.log: No such file or directory"


def _kernel_log(facts: NodeFacts, node: str, lines: list[tuple[datetime, str]]) -> Answer:
    nvrm = [(t, text) for t, text in lines if "NVRM" in text][-2000:]
    if facts.agent_kernel_log == JOURNAL_FILES:
        read = KernelLogRead(JOURNAL_FILES, "/var/log/journal", "1 file, this boot",
                             [journal_line(int(t.timestamp() * 1_000_000), text) for t, text in nvrm])
        return render(read), "", 0
    if facts.agent_kernel_log == LOG_FILES:
        host = node.split(".")[0]
        rows = [f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f+00:00')} {host} kernel: {text}" for t, text in nvrm]
        read = KernelLogRead(LOG_FILES, "/var/log/kern.log", "since the last boot banner", rows)
        return render(read), _NO_JOURNAL + "\n", 0
    return render(KernelLogRead()), f"{_NO_JOURNAL}\n{_NO_FILES}\n", 1


def agent_read(
    facts: NodeFacts, node: str, command: str, kernel_lines: Callable[[NodeFacts], list[tuple[datetime, str]]]
) -> Answer | None:
    """The agent's answer to ``command`` where it differs from the host's; None = as the host."""
    real_node = facts.agent_kernel_log != "journalctl"
    if command == KERNEL_LOG and real_node:
        return "", "sh: 1: journalctl: not found\n", 127
    if command == KERNEL_LOG_DMESG and real_node:
        return "", "dmesg: read kernel buffer failed: Operation not permitted\n", 1
    if command == AGENT_KERNEL_LOG:
        if not real_node:
            return "", "journal /var/log/journal: not mounted in this agent\n", 1
        return _kernel_log(facts, node, kernel_lines(facts))
    if facts.agent_driver != "runtime" and command in AGENT_SMI:
        return "", "sh: 1: nvidia-smi: not found\n", 127
    if command == AGENT_SMI_WHERE:
        if facts.agent_driver == "none":
            return "", f"nvidia-smi not found: looked on PATH, {SIM_DRIVER_ROOT}/bin\n", 127
        if facts.driver_install == "operator":
            # the GPU Operator's driver root, mounted as the OpenShift preset does (hostDriver.path)
            return f"host {OPERATOR_DRIVER_ROOT} (usr/bin/nvidia-smi, usr/lib64)\n", "", 0
        found = "PATH /usr/bin/nvidia-smi" if facts.agent_driver == "runtime" else (
            f"host {SIM_DRIVER_ROOT} (bin/nvidia-smi, lib64)")
        return found + "\n", "", 0
    for query, own in AGENT_SMI.items():
        if command == own:
            if facts.agent_driver == "none":
                return "", f"nvidia-smi: command not found (looked on PATH, {SIM_DRIVER_ROOT}/bin)\n", 127
            return render_smi(query.split()[1:], facts.gpus, facts.processes, facts.driver, facts.cuda)
    return None
