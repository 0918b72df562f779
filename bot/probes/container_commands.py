"""The only commands gpubot ever runs inside a container: argv constants, never built from text.

Kept apart from ``bot.probes.exec`` (the WebSocket exec client, which enforces this list) so the
checks and the parsers of ``bot.probes.container`` can name the commands without importing the
Kubernetes client: ``gpubot runbook`` and ``help`` load every check and need neither.
"""

from __future__ import annotations

TORCH_PROBE = (
    "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), "
    "torch.cuda.device_count())"
)

#: name -> argv; the only things gpubot ever runs in a container
EXEC_COMMANDS: dict[str, list[str]] = {
    "nvidia_smi": ["nvidia-smi"],
    "dev_nvidia": ["sh", "-c", "ls -l --time-style=full-iso /dev/nvidia*"],
    "driver_version": ["cat", "/proc/driver/nvidia/version"],
    "pid1": ["cat", "/proc/1/comm"],
    "torch": ["python", "-c", TORCH_PROBE],
    "env": ["env"],
}
