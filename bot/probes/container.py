"""Exec reads: what a pod's GPU containers themselves see, parsed into a ``ContainerView``.

``nvml`` and ``verify`` look inside the container because that is where the field notes' hardest
failures show (NVML "Unknown Error" after a host daemon-reload, a CPU-only torch, a shell as PID
1). Only the fixed argv lists of ``bot.probes.container_commands.EXEC_COMMANDS`` run, through
the caller's exec function; no pod, namespace or user text ever becomes part of a command. The
environment is filtered to GPU-related variables here, so other variables (tokens, passwords)
are never stored or shown.

This module must never run anything outside that allow-list, write to the container, or keep
an unfiltered environment.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.errors import GpubotError
from bot.kube.resources import container_gpu_resources
from bot.probes.container_commands import EXEC_COMMANDS
from bot.probes.devices import DevEntry, parse_ls
from bot.probes.nvidia_smi import parse_cuda_version, parse_driver_version, parse_proc_driver_version

Obj = dict[str, Any]

#: which environment variables are GPU-related (the field notes' ``env | grep -iE ...``)
GPU_ENV = re.compile(r"cuda|nvidia|gpu|qgpu", re.IGNORECASE)
#: commands run per container; the names are keys of EXEC_COMMANDS
COMMANDS: tuple[str, ...] = ("nvidia_smi", "dev_nvidia", "driver_version", "pid1", "torch", "env")
#: the most output kept per command: evidence, not a log
MAX_OUTPUT = 20_000


@dataclass(frozen=True)
class ExecOutput:
    """One command's result; ``error`` set when the exec itself failed (nothing ran)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    error: str = ""

    @property
    def ran(self) -> bool:
        return not self.error

    @property
    def ok(self) -> bool:
        return self.ran and self.exit_code == 0

    @property
    def text(self) -> str:
        """stdout and stderr together: nvidia-smi prints NVML failures on stdout, ls on stderr."""
        return "\n".join(t for t in (self.stdout.strip(), self.stderr.strip()) if t)


@dataclass(frozen=True)
class TorchInfo:
    """``torch.__version__, torch.version.cuda, torch.cuda.is_available(), device_count()``."""

    version: str
    cuda: str | None
    available: bool
    device_count: int


@dataclass
class ContainerView:
    """Parsed results of the allow-listed commands in one container."""

    container: str
    gpu_resources: dict[str, float]
    outputs: dict[str, ExecOutput] = field(default_factory=dict)
    devices: list[DevEntry] = field(default_factory=list)
    driver_version: str | None = None
    #: highest CUDA the node's driver supports, as the container's nvidia-smi prints it
    smi_cuda_version: str | None = None
    smi_driver_version: str | None = None
    pid1: str | None = None
    torch: TorchInfo | None = None
    #: why torch could not be read (no python, no torch module), when it could not
    torch_problem: str = ""
    #: GPU-related variables only (see GPU_ENV)
    gpu_env: dict[str, str] = field(default_factory=dict)

    def out(self, name: str) -> ExecOutput:
        return self.outputs.get(name, ExecOutput(error="not run"))

    @property
    def reachable(self) -> bool:
        """At least one command ran: the container could be exec'd into at all."""
        return any(o.ran for o in self.outputs.values())


@dataclass
class ExecFacts:
    """The target pod and what each examined container showed."""

    namespace: str
    pod: str
    node: str
    containers: list[ContainerView] = field(default_factory=list)


def parse_torch(text: str) -> TorchInfo | None:
    """The last line of the torch probe: ``VERSION CUDA AVAILABLE COUNT`` (CUDA may be ``None``)."""
    for line in reversed(text.strip().splitlines()):
        parts = line.split()
        if len(parts) != 4 or parts[2] not in ("True", "False"):
            continue
        try:
            count = int(parts[3])
        except ValueError:
            continue
        cuda = None if parts[1] in ("None", "") else parts[1]
        return TorchInfo(version=parts[0], cuda=cuda, available=parts[2] == "True", device_count=count)
    return None


def parse_env(text: str) -> dict[str, str]:
    """GPU-related ``NAME=value`` lines of ``env`` output; everything else is dropped unread."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name and GPU_ENV.search(name):
            env[name] = value
    return env


def _torch_problem(out: ExecOutput) -> str:
    if not out.ran:
        return f"could not run python: {out.error}"
    text = out.text
    if out.exit_code == 127 or ("not found" in text.lower() and "python" in text.lower()):
        return "no python in the image"
    if "No module named 'torch'" in text or 'No module named "torch"' in text:
        return "torch is not installed in the image"
    last = text.strip().splitlines()[-1] if text.strip() else f"exit {out.exit_code}"
    return f"torch probe failed: {last[:200]}"


def build_view(container: str, gpu: dict[str, float], outputs: dict[str, ExecOutput]) -> ContainerView:
    """Parse raw outputs into a ContainerView; never raises on odd text."""
    view = ContainerView(container=container, gpu_resources=gpu, outputs=outputs)
    smi = view.out("nvidia_smi")
    if smi.ran:
        view.smi_cuda_version = parse_cuda_version(smi.stdout)
        view.smi_driver_version = parse_driver_version(smi.stdout)
    dev = view.out("dev_nvidia")
    if dev.ran:
        view.devices = parse_ls(dev.stdout)
    drv = view.out("driver_version")
    if drv.ok:
        view.driver_version = parse_proc_driver_version(drv.stdout)
    pid1 = view.out("pid1")
    if pid1.ok and pid1.stdout.strip():
        view.pid1 = pid1.stdout.strip().splitlines()[0].strip()
    torch = view.out("torch")
    view.torch = parse_torch(torch.stdout) if torch.ok else None
    if view.torch is None:
        view.torch_problem = _torch_problem(torch)
    env = view.out("env")
    if env.ok:
        view.gpu_env = parse_env(env.stdout)
    return view


def containers_to_examine(pod: Obj) -> list[tuple[str, dict[str, float]]]:
    """(name, GPU requests) of the containers asking for a GPU resource; every container if none do."""
    containers = (pod.get("spec") or {}).get("containers") or []
    named = [(str(c.get("name", "")), container_gpu_resources(c)) for c in containers if c.get("name")]
    gpu = [(n, r) for n, r in named if r]
    return gpu or named


def running_containers(pod: Obj) -> set[str] | None:
    """Names of containers whose status says running; None when the pod reports no statuses."""
    statuses = (pod.get("status") or {}).get("containerStatuses")
    if not statuses:
        return None
    return {str(s.get("name")) for s in statuses if "running" in (s.get("state") or {})}


#: runs a fixed read command in a container: (namespace, pod, container, argv) -> (stdout, stderr, exit)
ExecFn = Callable[[str, str, str, list[str]], Awaitable[tuple[str, str, int]]]


async def _run_one(exec_fn: ExecFn, ns: str, pod: str, container: str, name: str) -> ExecOutput:
    try:
        stdout, stderr, code = await exec_fn(ns, pod, container, list(EXEC_COMMANDS[name]))
    except GpubotError as exc:
        return ExecOutput(error=exc.user_message or type(exc).__name__)
    except (OSError, ValueError, TimeoutError) as exc:
        return ExecOutput(error=type(exc).__name__)
    return ExecOutput(stdout[:MAX_OUTPUT], stderr[:MAX_OUTPUT], int(code))


async def examine_container(
    exec_fn: ExecFn, ns: str, pod: str, container: str, gpu: dict[str, float]
) -> ContainerView:
    """Run every allow-listed read in one container, concurrently, and parse the outputs."""
    results = await asyncio.gather(*(_run_one(exec_fn, ns, pod, container, name) for name in COMMANDS))
    return build_view(container, gpu, dict(zip(COMMANDS, results, strict=True)))
