"""The container verification chain shared by the container checks.

The field notes' chain, in order: device files, driver, nvidia-smi (NVML), the framework's CUDA
build and whether it sees a device, the node driver's CUDA against the container's, the GPU
environment, and what PID 1 is. Each check that names a broken link shows the whole chain as
evidence; ``container.chain`` speaks only when no named problem explains the container.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from bot.engine.facts import Facts
from bot.errors import NodeProbeError
from bot.probes.container import ContainerView, ExecFacts
from bot.probes.observation import NodeObservation

NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error"


def label(ex: ExecFacts, view: ContainerView) -> str:
    """How a container is named in titles: the pod, plus the container when several were examined."""
    ref = f"{ex.namespace}/{ex.pod}"
    return ref if len(ex.containers) == 1 else f"{ref} ({view.container})"


def human_delta(delta: timedelta) -> str:
    seconds = int(abs(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    if hours or days:
        parts.append(f"{hours}h")
    parts.append(f"{minutes}m")
    if not days:
        parts.append(f"{secs}s")
    return " ".join(parts)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``"12.2"`` -> (12, 2); ``"11.8.89"`` -> (11, 8, 89); None when no leading number."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    if not match:
        return None
    return tuple(int(p) for p in match.group(1).split("."))


def older(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """a < b, comparing only as many parts as both have (12.2 is not older than 12.2.1)."""
    n = min(len(a), len(b))
    return a[:n] < b[:n]


def started_at(pod: dict[str, Any] | None, container: str) -> datetime | None:
    for s in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        if s.get("name") == container:
            stamp = ((s.get("state") or {}).get("running") or {}).get("startedAt")
            try:
                return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None
            except ValueError:
                return None
    return None


def device_lines(view: ContainerView) -> list[str]:
    return [f"/dev/{d.name} {d.mode} modified {d.mtime.isoformat()}" for d in view.devices[:12]]


def chain_evidence(facts: Facts, ex: ExecFacts, view: ContainerView) -> list[str]:
    """The whole verification chain of one container, one line per link."""
    where = f"{ex.namespace}/{ex.pod}/{view.container}"
    lines = []
    if view.torch is not None:
        t = view.torch
        lines.append(f"{where}: torch {t.version}, CUDA build {t.cuda or 'None'}, "
                     f"cuda.is_available() {t.available}, device_count {t.device_count}")
    else:
        lines.append(f"{where}: torch: {view.torch_problem}")
    names = ", ".join(d.name for d in view.devices) or "none"
    lines.append(f"{where}: device files: {names}")
    lines.append(f"{where}: driver (/proc/driver/nvidia/version): {view.driver_version or 'not readable'}")
    smi = view.out("nvidia_smi")
    if smi.ok:
        lines.append(f"{where}: nvidia-smi works (driver {view.smi_driver_version or '?'}, "
                     f"CUDA {view.smi_cuda_version or '?'})")
    else:
        first = next((ln.strip() for ln in smi.text.splitlines() if ln.strip()), smi.error or "no output")
        lines.append(f"{where}: nvidia-smi failed (exit {smi.exit_code}): {first[:200]}")
    cuda, source = node_cuda(facts, ex, view)
    if cuda:
        lines.append(f"{where}: node driver supports CUDA {cuda} ({source})")
    env = ", ".join(f"{k}={v[:120]}" for k, v in sorted(view.gpu_env.items())) or "none"
    lines.append(f"{where}: GPU environment: {env}")
    lines.append(f"{where}: PID 1: {view.pid1 or 'not readable'}")
    return lines


def unexplained_problems(view: ContainerView) -> list[str]:
    """Broken links no specific code covers: no devices, nvidia-smi failing, framework sees no GPU."""
    out = []
    if not view.devices:
        out.append("no /dev/nvidia* device files in the container")
    smi = view.out("nvidia_smi")
    # nvidia-smi missing from the image (exit 127) is shown in the chain but breaks nothing
    if smi.ran and not smi.ok and smi.exit_code != 127 and NVML_UNKNOWN not in smi.text:
        first = next((ln.strip() for ln in smi.text.splitlines() if ln.strip()), f"exit {smi.exit_code}")
        out.append(f"nvidia-smi fails: {first[:200]}")
    t = view.torch
    if t is not None and t.cuda is not None and (not t.available or t.device_count < 1):
        out.append(f"torch (CUDA {t.cuda}) sees no GPU: is_available {t.available}, "
                   f"device_count {t.device_count}")
    return out


def _reading(facts: Facts, node: str) -> NodeObservation | NodeProbeError | None:
    return facts.node_readings.get(node) if facts.gathered("node_readings") else None


def node_cuda(facts: Facts, ex: ExecFacts, view: ContainerView) -> tuple[str, str]:
    """The node driver's highest CUDA: read on the pod's node, else the container's nvidia-smi."""
    result = _reading(facts, ex.node)
    if isinstance(result, NodeObservation) and result.cuda_version:
        return result.cuda_version, f"nvidia-smi on node {ex.node} over SSH"
    if view.smi_cuda_version:
        why = f"node {ex.node} not reachable over SSH; " if isinstance(result, NodeProbeError) else ""
        return view.smi_cuda_version, f"{why}as nvidia-smi inside the container prints it"
    return "", ""


def node_driver(facts: Facts, ex: ExecFacts, view: ContainerView) -> str:
    result = _reading(facts, ex.node)
    if isinstance(result, NodeObservation) and result.driver_version:
        return result.driver_version
    return view.driver_version or view.smi_driver_version or "?"


def nvml_lost(view: ContainerView) -> bool:
    """nvidia-smi fails with NVML's Unknown Error while the device files are there."""
    return NVML_UNKNOWN in view.out("nvidia_smi").text and bool(view.devices)


def torch_cpu_build(view: ContainerView) -> bool:
    return view.torch is not None and view.torch.cuda is None


def cuda_mismatch(facts: Facts, ex: ExecFacts, view: ContainerView) -> tuple[str, str] | None:
    """(node CUDA, where it was read) when the node driver's CUDA is older than torch's build."""
    if view.torch is None or view.torch.cuda is None:
        return None
    cuda, source = node_cuda(facts, ex, view)
    have, need = version_tuple(cuda), version_tuple(view.torch.cuda)
    if have is None or need is None or not older(have, need):
        return None
    return cuda, source


def explained(facts: Facts, ex: ExecFacts, view: ContainerView) -> bool:
    """A named problem (NVML, CPU-only torch, driver too old) explains this container."""
    return nvml_lost(view) or torch_cpu_build(view) or cuda_mismatch(facts, ex, view) is not None
