"""Parse ``ls -l --time-style=full-iso /dev/nvidia*`` and measure device-file time skew.

When systemd or the container runtime recreates the device cgroup, NVML in running containers
fails with "Unknown Error" while ``/dev/nvidia*`` still exist; the field notes read the device
files' timestamps to see when the nodes were (re)created. These functions only read text, never
a file, and never raise on odd lines (``ls`` prints headers and errors among the entries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

LS_DEV_NVIDIA = "ls -l --time-style=full-iso /dev/nvidia*"

_LINE = re.compile(
    r"^(?P<mode>[bcdlps-][rwxsStT-]{9})[.+@]?\s+\d+\s+\S+\s+\S+\s+"
    r"(?:(?P<major>\d+),\s*(?P<minor>\d+)|(?P<size>\d+))\s+"
    r"(?P<date>\d{4}-\d{2}-\d{2})\s+(?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?\s+"
    r"(?P<tz>[+-]\d{4})\s+(?P<path>\S.*?)(?:\s+->\s+.*)?$"
)
_GPU_NODE = re.compile(r"^nvidia\d+$")
_CONTROL_NODES = frozenset({"nvidiactl", "nvidia-uvm"})


@dataclass(frozen=True)
class DevEntry:
    """One listed file: its base name, modification time (timezone-aware) and type/mode."""

    name: str
    mtime: datetime
    mode: str = ""


def parse_ls(text: str) -> list[DevEntry]:
    """Entries of ``ls -l --time-style=full-iso`` output; other lines are ignored."""
    out = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        frac = (match.group("frac") or "0")[:6].ljust(6, "0")
        stamp = f"{match.group('date')}T{match.group('time')}.{frac}{match.group('tz')}"
        try:
            mtime = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z")
        except ValueError:
            continue
        name = match.group("path").rsplit("/", 1)[-1]
        if name:
            out.append(DevEntry(name=name, mtime=mtime, mode=match.group("mode")))
    return out


def device_time_skew(entries: list[DevEntry]) -> timedelta | None:
    """Spread of mtimes across the GPU nodes (nvidiaN) and nvidiactl/nvidia-uvm.

    None when there is nothing to compare: no card node, or neither control node.
    """
    cards = [e.mtime for e in entries if _GPU_NODE.match(e.name)]
    control = [e.mtime for e in entries if e.name in _CONTROL_NODES]
    if not cards or not control:
        return None
    every = cards + control
    return max(every) - min(every)
