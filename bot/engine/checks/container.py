"""nvml / verify checks: what the pod's GPU containers see, read by ``exec.container_facts``.

The field notes' container verification chain, in order: device files, driver, nvidia-smi
(NVML), the framework's CUDA build and whether it sees a device, the node driver's CUDA against
the container's, the GPU environment, and what PID 1 is. Each broken link gets its own code;
the whole chain is always shown as evidence. These checks only read gathered facts.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from bot.engine.checks.common import target
from bot.engine.context import Context, Emission
from bot.errors import NodeProbeError
from bot.probes.devices import device_time_skew
from bot.probes.facts_exec import ContainerView, ExecFacts
from bot.probes.node import NodeObservation
from bot.registry import check
from bot.report import Remediation

NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error"
#: codes that name a broken link of the chain; when one is emitted the chain is not "OK"
CHAIN_PROBLEMS = ("NVML_CGROUP_LOST", "TORCH_CPU_BUILD", "DRIVER_TOO_OLD")


def exec_facts(ctx: Context) -> ExecFacts | None:
    facts = ctx.fact("exec.container_facts")
    return facts if isinstance(facts, ExecFacts) else None


def _label(facts: ExecFacts, view: ContainerView) -> str:
    """How a container is named in titles: the pod, plus the container when several were examined."""
    ref = f"{facts.namespace}/{facts.pod}"
    return ref if len(facts.containers) == 1 else f"{ref} ({view.container})"


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


def _older(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """a < b, comparing only as many parts as both have (12.2 is not older than 12.2.1)."""
    n = min(len(a), len(b))
    return a[:n] < b[:n]


def _started_at(pod: dict[str, Any] | None, container: str) -> datetime | None:
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


def chain_evidence(ctx: Context, facts: ExecFacts, view: ContainerView) -> list[str]:
    """The whole verification chain of one container, one line per link."""
    where = f"{facts.namespace}/{facts.pod}/{view.container}"
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
    cuda, source = node_cuda(ctx, facts, view)
    if cuda:
        lines.append(f"{where}: node driver supports CUDA {cuda} ({source})")
    env = ", ".join(f"{k}={v[:120]}" for k, v in sorted(view.gpu_env.items())) or "none"
    lines.append(f"{where}: GPU environment: {env}")
    lines.append(f"{where}: PID 1: {view.pid1 or 'not readable'}")
    return lines


def _problems(view: ContainerView) -> list[str]:
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


# ------------------------------------------------------------------------------------- nvml


@check("container.nvml", needs=("exec.container_facts", "kube.target"))
def nvml(ctx: Context) -> None:
    """NVML_CGROUP_LOST: nvidia-smi's NVML Unknown Error while /dev/nvidia* exist, with the time skew."""
    facts = exec_facts(ctx)
    if facts is None:
        return
    t = target(ctx)
    refs = (((t.pod if t else None) or {}).get("metadata") or {}).get("ownerReferences") or []
    owned = any(r.get("controller") for r in refs)
    for view in facts.containers:
        smi = view.out("nvidia_smi")
        if NVML_UNKNOWN not in smi.text or not view.devices:
            continue
        skew = device_time_skew(view.devices)
        evidence = [f"nvidia-smi in {view.container}: {NVML_UNKNOWN} (exit {smi.exit_code})"]
        evidence += device_lines(view)
        skew_text = human_delta(skew) if skew is not None else "an unmeasurable amount"
        if skew is not None:
            evidence.append(f"time skew between the card files (nvidiaN) and nvidiactl/nvidia-uvm: "
                            f"{skew_text}")
        started = _started_at(t.pod if t else None, view.container)
        if started is not None:
            newest = max(d.mtime for d in view.devices)
            if newest > started:
                evidence.append(f"device files changed {human_delta(newest - started)} after the container "
                                f"started ({started.isoformat()}): they were re-attached while it ran")
        if view.driver_version:
            evidence.append(f"/proc/driver/nvidia/version still reads driver {view.driver_version}")
        ref = f"{facts.namespace}/{facts.pod}"
        summary = (f"Delete {ref} gracefully so its controller recreates it" if owned else
                   f"Delete {ref} gracefully (no controller owns it: recreate it yourself)")
        ctx.emit(
            "NVML_CGROUP_LOST",
            pod=_label(facts, view),
            container=view.container,
            skew=skew_text,
            evidence=evidence,
            remediations=[Remediation("pod.delete", {"namespace": facts.namespace, "pod": facts.pod},
                                      summary)],
        )


# ------------------------------------------------------------------------------------- verify


def node_cuda(ctx: Context, facts: ExecFacts, view: ContainerView) -> tuple[str, str]:
    """The node driver's highest CUDA: over SSH on the pod's node, else the container's nvidia-smi."""
    result = (ctx.fact("node.physical") or {}).get(facts.node)
    if isinstance(result, NodeObservation) and result.cuda_version:
        return result.cuda_version, f"nvidia-smi on node {facts.node} over SSH"
    if view.smi_cuda_version:
        why = f"node {facts.node} not reachable over SSH; " if isinstance(result, NodeProbeError) else ""
        return view.smi_cuda_version, f"{why}as nvidia-smi inside the container prints it"
    return "", ""


def _node_driver(ctx: Context, facts: ExecFacts, view: ContainerView) -> str:
    result = (ctx.fact("node.physical") or {}).get(facts.node)
    if isinstance(result, NodeObservation) and result.driver_version:
        return result.driver_version
    return view.driver_version or view.smi_driver_version or "?"


@check("container.torch_build", needs=("exec.container_facts",))
def torch_build(ctx: Context) -> None:
    """TORCH_CPU_BUILD: torch.version.cuda is None."""
    facts = exec_facts(ctx)
    if facts is None:
        return
    for view in facts.containers:
        t = view.torch
        if t is not None and t.cuda is None:
            ctx.emit("TORCH_CPU_BUILD", pod=_label(facts, view), container=view.container,
                     evidence=[f"{view.container}: torch {t.version}, torch.version.cuda None, "
                               f"cuda.is_available() {t.available}, device_count {t.device_count}"])


@check("container.driver_cuda", needs=("exec.container_facts", "node.physical"))
def driver_cuda(ctx: Context) -> None:
    """DRIVER_TOO_OLD: the node driver's CUDA is lower than the container's torch CUDA build."""
    facts = exec_facts(ctx)
    if facts is None:
        return
    for view in facts.containers:
        if view.torch is None or view.torch.cuda is None:
            continue
        cuda, source = node_cuda(ctx, facts, view)
        have, need = version_tuple(cuda), version_tuple(view.torch.cuda)
        if have is None or need is None or not _older(have, need):
            continue
        driver = _node_driver(ctx, facts, view)
        ctx.emit(
            "DRIVER_TOO_OLD",
            pod=_label(facts, view),
            container=view.container,
            node=facts.node or "?",
            driver=driver,
            driver_cuda=cuda,
            container_cuda=view.torch.cuda,
            evidence=[f"node driver {driver} supports CUDA up to {cuda} ({source})",
                      f"{view.container}: torch {view.torch.version} was built for CUDA {view.torch.cuda}"],
        )


@check("container.pid1", needs=("exec.container_facts",), tables=("shells",))
def pid1(ctx: Context) -> None:
    """PID1_SHELL: /proc/1/comm is an interactive shell."""
    facts = exec_facts(ctx)
    shells = {str(r.get("comm", "")).strip() for r in ctx.tables.get("shells", [])}
    if facts is None:
        return
    for view in facts.containers:
        if view.pid1 and view.pid1 in shells:
            ctx.emit("PID1_SHELL", pod=_label(facts, view), container=view.container,
                     comm=view.pid1, evidence=[f"{view.container}: /proc/1/comm is {view.pid1}"])


def _container_emissions(ctx: Context, codes: tuple[str, ...], container: str) -> list[Emission]:
    return [e for e in ctx.emissions if e.code in codes and e.params.get("container") == container]


@check("container.chain", needs=("exec.container_facts",))
def chain(ctx: Context) -> None:
    """The whole chain as evidence: CONTAINER_GPU_OK, CONTAINER_GPU_UNAVAILABLE, or on the problem found."""
    facts = exec_facts(ctx)
    if facts is None:
        return
    for view in facts.containers:
        evidence = chain_evidence(ctx, facts, view)
        label = _label(facts, view)
        explained = _container_emissions(ctx, CHAIN_PROBLEMS, view.container)
        problems = _problems(view)
        if explained:
            explained[0].evidence.extend(e for e in evidence if e not in explained[0].evidence)
            continue
        if problems:
            ctx.emit("CONTAINER_GPU_UNAVAILABLE", pod=label, container=view.container,
                     what="; ".join(problems), evidence=problems + evidence)
            continue
        t = view.torch
        what = (f"torch {t.version}, CUDA {t.cuda}, {t.device_count} device(s)" if t is not None
                else f"nvidia-smi works; torch not checked: {view.torch_problem}")
        ctx.emit("CONTAINER_GPU_OK", pod=label, container=view.container, what=what, evidence=evidence)
