"""The node agent's nvidia-smi, found where the platform put the host's driver.

Where no RuntimeClass injects the driver into the agent (GKE on COS without the GPU Operator,
a cluster whose containerd has no NVIDIA runtime), the chart mounts the host's driver
directories read-only (``nodeAgent.hostDriver``) and tells the agent where, in
``GPUBOT_DRIVER_ROOTS`` (JSON: ``[{"mount", "host", "bin", "lib"}]``). ``python -m bot.agent
nvidia-smi NAME`` runs the first nvidia-smi it finds, on PATH (the runtime's) first, then in each
root in order, with that root's library directory first on ``LD_LIBRARY_PATH``; ``where`` prints
which one that is. The argv is fixed (``bot.probes.agent_reads.SMI_QUERIES``) and no shell runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.probes.agent_reads import SMI_QUERIES

ENV = "GPUBOT_DRIVER_ROOTS"
NOT_FOUND = 127
#: nvidia-smi answers in well under a second; a hung driver must not hold the exec forever
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class DriverRoot:
    """One host driver directory: where the agent sees it, where the host has it, bin and lib in it."""

    mount: str
    host: str
    bin: str
    lib: str


@dataclass(frozen=True)
class Found:
    """The nvidia-smi to run: its path, the library directory it needs ("" = as the image has
    it), and how to say where it came from."""

    binary: str
    lib: str
    where: str


def roots_from_env(text: str | None) -> list[DriverRoot]:
    """The chart's roots; a malformed setting is no roots (``where`` says none was found)."""
    try:
        raw = json.loads(text or "[]")
    except ValueError:
        return []
    out = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and str(item.get("mount", "")).startswith("/"):
            out.append(DriverRoot(str(item["mount"]), str(item.get("host") or item["mount"]),
                                  str(item.get("bin") or "bin"), str(item.get("lib") or "lib64")))
    return out


def find(roots: list[DriverRoot], path: str | None = None) -> tuple[Found | None, list[str]]:
    """The nvidia-smi to run, and where it was looked for (for "not found")."""
    on_path = shutil.which("nvidia-smi", path=path if path is not None else os.environ.get("PATH"))
    if on_path:
        return Found(on_path, "", f"PATH {on_path}"), []
    looked = ["PATH"]
    for root in roots:
        binary = Path(root.mount, root.bin, "nvidia-smi")
        if os.access(binary, os.X_OK):
            where = f"host {root.host} ({root.bin}/nvidia-smi, {root.lib})"
            return Found(str(binary), str(Path(root.mount, root.lib)), where), looked
        looked.append(f"{root.host}/{root.bin}")
    return None, looked


def run(name: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """``python -m bot.agent nvidia-smi NAME``: the query's output and exit status, or 127."""
    found, looked = find(roots_from_env(os.environ.get(ENV)))
    if name == "where":
        if found is None:
            err.write(f"nvidia-smi not found: looked on {', '.join(looked)}\n")
            return NOT_FOUND
        out.write(found.where + "\n")
        return 0
    if name not in SMI_QUERIES:
        err.write(f"unknown nvidia-smi read {name!r}; one of {', '.join(SMI_QUERIES)}\n")
        return 2
    if found is None:
        err.write(f"nvidia-smi: command not found (looked on {', '.join(looked)})\n")
        return NOT_FOUND
    env = dict(os.environ)
    if found.lib:
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (found.lib, env.get("LD_LIBRARY_PATH", "")) if p)
    argv = [found.binary, *shlex.split(SMI_QUERIES[name])[1:]]
    try:
        done = subprocess.run(argv, capture_output=True, env=env, timeout=TIMEOUT_S, check=False)  # noqa: S603
    except subprocess.TimeoutExpired:
        err.write(f"nvidia-smi did not answer within {TIMEOUT_S:g}s\n")
        return 124
    except OSError as exc:
        err.write(f"nvidia-smi: {exc.strerror or exc}\n")
        return 126
    out.write(done.stdout.decode("utf-8", "replace"))
    err.write(done.stderr.decode("utf-8", "replace"))
    return done.returncode
