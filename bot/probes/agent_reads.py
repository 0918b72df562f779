"""The reads only the node agent makes: its own Python, run in its container (``bot.agent``).

SSH reaches a root shell on the host, where ``journalctl`` and ``nvidia-smi`` are; the agent is an
unprivileged container with neither, so for those two reads the bot execs the gpubot image's own
code into it: ``bot.agent kernel-log`` reads the host's journal files or text logs through the
chart's read-only ``/var/log`` mount, and ``bot.agent nvidia-smi NAME`` runs the host's nvidia-smi
from one of the chart's read-only driver mounts with its libraries on ``LD_LIBRARY_PATH``. Each
command is a constant; what it reads (which directories, which driver roots) comes from the
environment the chart gives the container, never from the command line, so no text of a user,
a node or a pod ever reaches the agent's shell. ``bot.probes.node.observe_with`` runs them only
over the agent transport, after the plain read failed.
"""

from __future__ import annotations

from bot.probes.gpu_health import ECC_QUERY
from bot.probes.nvidia_smi import APPS_QUERY, GPU_QUERY, SUMMARY

#: where the GPU Operator's driver container keeps the driver's root on the host
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
#: the agent's entry point (the image's Python, first on the agent's PATH)
AGENT_MODULE = "python -m bot.agent"
AGENT_KERNEL_LOG = f"{AGENT_MODULE} kernel-log"
#: where the agent finds nvidia-smi (the first line: "PATH /usr/bin/nvidia-smi" or "host ROOT ...")
AGENT_SMI_WHERE = f"{AGENT_MODULE} nvidia-smi where"
#: the nvidia-smi reads by the name the agent's command takes
SMI_QUERIES: dict[str, str] = {"gpu": GPU_QUERY, "apps": APPS_QUERY, "summary": SUMMARY, "ecc": ECC_QUERY}
#: the plain nvidia-smi read -> the agent's command that runs it from the host's driver directory
AGENT_SMI: dict[str, str] = {query: f"{AGENT_MODULE} nvidia-smi {name}" for name, query in SMI_QUERIES.items()}

#: every agent-only command, exactly as sent
AGENT_READ_COMMANDS: frozenset[str] = frozenset({AGENT_KERNEL_LOG, AGENT_SMI_WHERE, *AGENT_SMI.values()})
