"""What each node read needs on the node, and how the unprivileged node agent gets it.

One entry per command of ``bot.probes.ssh.READ_COMMANDS`` (the combined read is only their
frame). docs/node-reads.md is this table in words, with the distributions it was checked against;
tests/deploy/test_node_reads.py holds the chart to it: every host path an agent read needs is
mounted read-only by the gpubot-node DaemonSet, every path a command names is declared here, and
every read the agent cannot make names what stands in for it.

``agent`` says how the agent's container gets what the read needs:

- ``mounted``: a read-only hostPath mount of the chart, at the path the command names;
- ``runtime``: the NVIDIA container runtime (``runtimeClassName``) injects the binary, its
  libraries and the device files (``NVIDIA_DRIVER_CAPABILITIES=utility``);
- ``own``: the container's own view is the host's (``/proc/driver/nvidia`` is not per-namespace);
- ``host-only``: only a root shell on the host (SSH) has it; ``instead`` says what the agent
  transport uses in its place, or how the report says it could not read it;
- ``agent-only``: the agent's own code (``bot.agent``, ``AGENT_READ_COMMANDS``) reading ``paths``
  through the chart's read-only mounts; SSH never sends it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.probes.agent_reads import AGENT_KERNEL_LOG, AGENT_SMI, AGENT_SMI_WHERE, OPERATOR_DRIVER_ROOT
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.probes.devices import LS_DEV_NVIDIA
from bot.probes.gpu_health import ECC_QUERY, KERNEL_LOG, KERNEL_LOG_DMESG
from bot.probes.nvidia_smi import APPS_QUERY, GPU_QUERY, SUMMARY
from bot.probes.ssh import CAT_CHECKPOINT, DRIVER_VERSION, KUBELET_ACTIVE, OPERATOR_PREFIX

AgentAccess = Literal["mounted", "runtime", "own", "host-only", "agent-only"]



@dataclass(frozen=True)
class NodeRead:
    """One read command and what it needs."""

    command: str
    #: what it tells the diagnosis
    tells: str
    #: host paths it reads (files, directories, sockets, device files; a glob as the command has it)
    paths: tuple[str, ...] = ()
    #: binaries it runs
    binaries: tuple[str, ...] = ()
    #: capabilities it needs beyond none (the agent drops ALL)
    capabilities: tuple[str, ...] = ()
    agent: AgentAccess = "mounted"
    #: host-only: what the agent transport does instead (the module that does it, or "not readable")
    instead: str = ""


#: where the chart mounts the host's driver directories in the agent (``/host-driver/N``)
HOST_DRIVER_MOUNT = "/host-driver"

_SMI = "nvidia-smi (the driver's user-space tools and libnvidia-ml), /dev/nvidiactl and /dev/nvidia*"

NODE_READS: tuple[NodeRead, ...] = (
    NodeRead(GPU_QUERY, "each card: uuid, model, utilisation, memory, temperature, power", binaries=("nvidia-smi",),
             agent="runtime"),
    NodeRead(APPS_QUERY, "the processes holding each card and their memory", binaries=("nvidia-smi",),
             agent="runtime"),
    NodeRead(SUMMARY, "driver and CUDA version, ERR! cells of unreachable cards", binaries=("nvidia-smi",),
             agent="runtime"),
    NodeRead(ECC_QUERY, "ECC counters, retired pages, remapped rows", binaries=("nvidia-smi",), agent="runtime"),
    *(
        NodeRead(OPERATOR_PREFIX + c, "the same, where the GPU Operator keeps the driver in its own root",
                 paths=(OPERATOR_DRIVER_ROOT,), binaries=("chroot", "nvidia-smi"), capabilities=("CAP_SYS_CHROOT",),
                 agent="host-only",
                 instead="the RuntimeClass puts the operator's nvidia-smi into the agent: the plain query answers")
        for c in (GPU_QUERY, APPS_QUERY, SUMMARY, ECC_QUERY)
    ),
    NodeRead(CAT_CHECKPOINT, "which pod the kubelet gave which GPU (a stale entry is a leaked GPU)",
             paths=(CHECKPOINT_PATH,), binaries=("cat",)),
    NodeRead(LS_DEV_NVIDIA, "the device files and their times (recreated nodes break NVML in running pods)",
             paths=("/dev/nvidia*",), binaries=("ls",)),
    NodeRead(DRIVER_VERSION, "the loaded kernel module's version", paths=("/proc/driver/nvidia/version",),
             binaries=("cat",), agent="own"),
    NodeRead(KUBELET_ACTIVE, "whether the kubelet unit runs", paths=("/run/systemd/private",),
             binaries=("systemctl",), agent="host-only", instead="bot.engine.gather.kubelet"),
    NodeRead(KERNEL_LOG, "NVRM Xid, fallen-off-the-bus and init-failure lines of this boot",
             paths=("/var/log/journal", "/run/log/journal"), binaries=("journalctl",), agent="host-only",
             instead="bot.agent.kernel_log"),
    NodeRead(KERNEL_LOG_DMESG, "the same lines from the kernel ring buffer", paths=("/dev/kmsg",),
             binaries=("dmesg",), capabilities=("CAP_SYSLOG",), agent="host-only",
             instead="bot.agent.kernel_log"),
    NodeRead(AGENT_KERNEL_LOG, "the same NVRM lines of this boot, from the host's journal files or syslog text files "
             "(nodeAgent.kernelLog); none readable: the report says so and says what it tried",
             paths=("/var/log",), binaries=("python",), agent="agent-only"),
    NodeRead(AGENT_SMI_WHERE, "where the agent finds nvidia-smi: its PATH (the RuntimeClass), else a host driver "
             "directory (nodeAgent.hostDriver)", paths=(HOST_DRIVER_MOUNT,), binaries=("python",),
             agent="agent-only"),
    *(
        NodeRead(command, "the nvidia-smi read, run from the host's driver directory with its libraries",
                 paths=(HOST_DRIVER_MOUNT,), binaries=("python", "nvidia-smi"), agent="agent-only")
        for command in AGENT_SMI.values()
    ),
)

BY_COMMAND: dict[str, NodeRead] = {r.command: r for r in NODE_READS}
