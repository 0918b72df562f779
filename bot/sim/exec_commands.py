"""What a command run by ``pods/exec`` prints inside a simulated container.

Answers come from the scenario's ContainerFacts (``containers: ns/pod/container``) and, for
GPU facts, from the node the pod runs on; absent facts get sensible defaults. Only a fixed set
of argv shapes is understood, the same ones the bot's exec probes send; anything else exits 127
so a test sees an unexpected command. Nothing here runs a process or reads a file.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.sim.scenario import ContainerFacts, DevFile, GpuFacts, NodeFacts, ProcessFacts, Scenario

Result = tuple[str, str, int]  # stdout, stderr, exit code
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LS_NVIDIA = "ls -l --time-style=full-iso /dev/nvidia*"
_GCC = "GCC version:  gcc version 8.5.0 20210514 (Red Hat 8.5.0-20) (GCC) "
_DRIVER_DATE = "Thu Nov 14 18:50:26 UTC 2024"


@dataclass
class ExecTarget:
    """The container an exec lands in, with everything a command may need to answer."""

    facts: ContainerFacts
    pod: dict[str, Any]
    node: NodeFacts | None

    @classmethod
    def resolve(cls, scenario: Scenario, pod: dict[str, Any], container: str) -> ExecTarget:
        meta = pod["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        spec_env: dict[str, str] = {}
        for c in (pod.get("spec") or {}).get("containers") or []:
            if c.get("name") == container:
                spec_env = {e["name"]: str(e["value"]) for e in c.get("env") or [] if "value" in e}
        facts = scenario.containers.get(f"{ns}/{name}/{container}")
        if facts is None:
            facts = ContainerFacts(namespace=ns, pod=name, container=container, env=spec_env)
        elif spec_env:
            facts = dataclasses.replace(facts, env={**spec_env, **facts.env})
        node = scenario.nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        return cls(facts, pod, node)

    @property
    def visible_gpus(self) -> list[GpuFacts]:
        gpus = self.node.gpus if self.node else []
        wanted = self.facts.env.get("NVIDIA_VISIBLE_DEVICES")
        if wanted is None or wanted.strip() == "all":
            return list(gpus)
        ids = {w.strip() for w in wanted.split(",") if w.strip()}
        return [g for g in gpus if g.uuid in ids or str(g.index) in ids]

    @property
    def visible_processes(self) -> list[ProcessFacts]:
        uuids = {g.uuid for g in self.visible_gpus}
        return [p for p in (self.node.processes if self.node else []) if p.gpu_uuid in uuids]

    @property
    def driver(self) -> str:
        return self.facts.driver or (self.node.driver if self.node else "")

    @property
    def started(self) -> str:
        status = self.pod.get("status") or {}
        return str(status.get("startTime") or self.pod["metadata"].get("creationTimestamp") or "")


def answer(target: ExecTarget, argv: list[str]) -> Result:
    """``(stdout, stderr, exit code)`` for one argv, as the container would produce them."""
    if not argv:
        return "", "", 0
    prog = argv[0].rsplit("/", 1)[-1]
    if prog in ("sh", "bash") and len(argv) >= 3 and argv[1] == "-c":
        return _shell(target, argv[2])
    if prog == "nvidia-smi":
        return _nvidia_smi(target, argv[1:])
    if prog == "cat" and len(argv) == 2:
        return _cat(target, argv[1])
    if prog.startswith("python") and len(argv) >= 3 and argv[1] == "-c" and "import torch" in argv[2]:
        return _torch(target)
    if prog == "env" and len(argv) == 1:
        return _env(target), "", 0
    return "", f"sh: 1: {argv[0]}: not found\n", 127


def _shell(target: ExecTarget, script: str) -> Result:
    """A shell line: the /dev glob is the only thing a shell adds; other lines run as argv."""
    if " ".join(script.split()) == _LS_NVIDIA:
        return _ls_nvidia(target)
    if any(ch in script for ch in "|;&$`<>*?()"):
        return "", f"sh: 1: {script.split()[0] if script.split() else script}: not found\n", 127
    return answer(target, shlex.split(script))


def _nvidia_smi(target: ExecTarget, args: list[str]) -> Result:
    if target.facts.nvidia_smi != "ok":
        # the real tool prints NVML init failures on stdout and exits 255
        return target.facts.nvidia_smi.rstrip("\n") + "\n", "", 255
    from bot.sim import nvidia_smi  # lazy: written in parallel, and heavy for non-GPU execs

    cuda = target.node.cuda if target.node else ""
    return nvidia_smi.render(args, target.visible_gpus, target.visible_processes, target.driver, cuda)


def _dev_files(target: ExecTarget) -> list[DevFile]:
    if target.facts.dev_nvidia:
        return target.facts.dev_nvidia
    gpus = target.visible_gpus
    if not gpus:
        return []
    names = ["nvidiactl", "nvidia-uvm"] + [f"nvidia{g.index}" for g in gpus]
    return [DevFile(name=n, mtime=target.started) for n in names]


def _device_numbers(name: str) -> tuple[int, int]:
    if name == "nvidiactl":
        return 195, 255
    if name == "nvidia-modeset":
        return 195, 254
    if name.startswith("nvidia-uvm"):
        return 236, 1 if name.endswith("tools") else 0
    suffix = name.removeprefix("nvidia")
    return 195, int(suffix) if suffix.isdigit() else 0


def _full_iso(mtime: str) -> str:
    try:
        when = datetime.fromisoformat(mtime.replace("Z", "+00:00"))
    except ValueError:
        return mtime
    return when.strftime("%Y-%m-%d %H:%M:%S.000000000 %z")


def _ls_nvidia(target: ExecTarget) -> Result:
    files = sorted(_dev_files(target), key=lambda d: d.name)
    if not files:
        return "", "ls: cannot access '/dev/nvidia*': No such file or directory\n", 2
    lines = []
    for dev in files:
        major, minor = _device_numbers(dev.name)
        lines.append(f"crw-rw-rw- 1 root root {major}, {minor:>3} {_full_iso(dev.mtime)} /dev/{dev.name}")
    return "\n".join(lines) + "\n", "", 0


def _cat(target: ExecTarget, path: str) -> Result:
    if path == "/proc/1/comm":
        return target.facts.pid1 + "\n", "", 0
    if path == "/proc/driver/nvidia/version" and target.driver:
        text = f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {target.driver}  {_DRIVER_DATE}\n{_GCC}\n"
        return text, "", 0
    return "", f"cat: {path}: No such file or directory\n", 1


def _torch(target: ExecTarget) -> Result:
    torch = target.facts.torch
    if not torch:
        trace = (
            "Traceback (most recent call last):\n"
            '  File "<string>", line 1, in <module>\n'
            "ModuleNotFoundError: No module named 'torch'\n"
        )
        return "", trace, 1
    cuda = torch.get("cuda") or None
    available = bool(torch.get("available", False))
    count = int(torch.get("device_count", 0) or 0)
    return f"{torch.get('version', '2.0.0')} {cuda} {available} {count}\n", "", 0


def _env(target: ExecTarget) -> str:
    env = {"PATH": _PATH, "HOSTNAME": target.pod["metadata"]["name"], **target.facts.env}
    return "".join(f"{k}={v}\n" for k, v in env.items())
