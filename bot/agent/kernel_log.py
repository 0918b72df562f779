"""The node agent's kernel-log read: NVRM lines of this boot from the host's mounted /var/log.

The unprivileged agent has neither ``journalctl`` nor ``/dev/kmsg`` (no ``CAP_SYSLOG``, and the
device cgroup does not open it), so ``python -m bot.agent kernel-log`` reads the host's log files
through the chart's read-only hostPath mount (``nodeAgent.kernelLog``), trying each configured
source in order until one is readable:

- ``journal=DIR``: systemd journal files (``bot.agent.journal_files``, pure Python), kernel
  messages of the current boot only;
- ``file=PATH``: a syslog text file (rsyslog's ``kern.log``, ``messages``, ``syslog``), its last
  ``TAIL_BYTES``, kernel lines after the last boot banner (``kernel: Linux version``).

What it prints is what ``bot.probes.gpu_health.parse_kernel_log`` reads (journal lines in
``short-iso`` form, text lines as written), after one header line that names the source:
``-- gpubot kernel log: <source> <path> (<detail>)``. When no source is readable it prints
``-- gpubot kernel log: none``, one stderr line per source with why, and exits 1: a log it could
not read is never an empty log. The sources come from the environment the chart sets
(``GPUBOT_KERNEL_LOG_SOURCES``), never from the command line, which is a fixed string.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bot.agent.journal_files import boot_time_us, current_boot_id, read_directory

ENV = "GPUBOT_KERNEL_LOG_SOURCES"
#: what the agent reads when the chart sets nothing: the usual places under a /var/log mount
DEFAULT_SOURCES = (
    "journal=/var/log/journal,journal=/run/log/journal,"
    "file=/var/log/kern.log,file=/var/log/messages,file=/var/log/syslog"
)
#: the header line's start (``parse_kernel_log`` skips every line starting with "-- ")
HEADER = "-- gpubot kernel log: "
#: source kinds as the header and ``NodeObservation.kernel_log`` name them
JOURNAL_FILES, LOG_FILES = "journal-files", "log-files"
#: what is read of a text log: its end (a kern.log rotates daily; a boot's NVRM lines are recent)
TAIL_BYTES = 16 << 20
#: the newest lines kept, as ``journalctl -n 2000``
MAX_LINES = 2000
PATTERN = "NVRM"
_BOOT_BANNER = "kernel: Linux version "


class Unreadable(Exception):
    """A source that exists but cannot give this boot's kernel log (the message says why)."""


@dataclass
class KernelLogRead:
    """The lines of the first readable source, or why none was."""

    source: str = ""
    path: str = ""
    detail: str = ""
    lines: list[str] = field(default_factory=list)
    #: one "kind path: why" per source that could not be read
    unreadable: list[str] = field(default_factory=list)
    #: notes about the read source (files skipped, compressed fields)
    notes: list[str] = field(default_factory=list)


def parse_sources(text: str) -> list[tuple[str, str]]:
    """``kind=path`` pairs of the setting; unknown kinds and relative paths are dropped."""
    out = []
    for item in text.split(","):
        kind, _, path = item.strip().partition("=")
        if kind in ("journal", "file") and path.startswith("/"):
            out.append((kind, path))
    return out


def journal_line(realtime_us: int, message: str) -> str:
    """One kernel message as ``journalctl -k -o short-iso`` prints it (UTC, no host name)."""
    stamp = datetime.fromtimestamp(realtime_us / 1_000_000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S%z")
    return f"{stamp} kernel: {message}"


def render(read: KernelLogRead) -> str:
    """The agent's stdout for ``read`` (the simulator prints the same for its nodes)."""
    if not read.source:
        return f"{HEADER}none\n"
    detail = f" ({read.detail})" if read.detail else ""
    return f"{HEADER}{read.source} {read.path}{detail}\n" + "".join(line + "\n" for line in read.lines)


def parse_header(stdout: str) -> tuple[str, str]:
    """(source, "path (detail)") from the agent's first line; ("", "") without one."""
    first = stdout.split("\n", 1)[0]
    if not first.startswith(HEADER):
        return "", ""
    source, _, rest = first[len(HEADER) :].partition(" ")
    return ("", "") if source == "none" else (source, rest.strip())


def _from_journal(directory: Path, proc: Path) -> KernelLogRead:
    boot = current_boot_id(proc)
    found = read_directory(directory, pattern=PATTERN.encode(), boot_id=boot, since_us=boot_time_us(proc))
    if not found.files:
        why = "; ".join(found.problems) or f"no journal file covers this boot ({found.older} older)"
        raise Unreadable(why)
    lines = [journal_line(line.realtime_us, line.message) for line in found.lines][-MAX_LINES:]
    scope = "this boot" if boot else "every boot: the boot id was not readable"
    detail = f"{found.files} file{'s' if found.files != 1 else ''}, {scope}"
    return KernelLogRead(JOURNAL_FILES, str(directory), detail, lines, notes=found.problems)


def _from_file(path: Path) -> KernelLogRead:
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TAIL_BYTES))
        text = handle.read().decode("utf-8", "replace")
    rows = text.splitlines()
    if size > TAIL_BYTES:
        rows = rows[1:]  # the first one is cut
    start = max((i for i, row in enumerate(rows) if _BOOT_BANNER in row), default=-1)
    scope = "since the last boot banner" if start >= 0 else "no boot banner in its end: may include earlier boots"
    lines = [row for row in rows[start + 1 :] if " kernel: " in row and PATTERN in row][-MAX_LINES:]
    return KernelLogRead(LOG_FILES, str(path), scope, lines)


def read_kernel_log(sources: Iterable[tuple[str, str]], proc: Path = Path("/proc")) -> KernelLogRead:
    """The first readable source's NVRM lines; every unreadable one says why."""
    unreadable = []
    for kind, path in sources:
        try:
            read = _from_journal(Path(path), proc) if kind == "journal" else _from_file(Path(path))
        except (OSError, Unreadable) as exc:
            unreadable.append(f"{kind} {path}: {getattr(exc, 'strerror', None) or exc}")
            continue
        read.unreadable = unreadable
        return read
    return KernelLogRead(unreadable=unreadable or ["no kernel log source configured"])


def main(out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """``python -m bot.agent kernel-log``: print the read; 1 when no source was readable."""
    read = read_kernel_log(parse_sources(os.environ.get(ENV) or DEFAULT_SOURCES))
    out.write(render(read))
    for line in [*read.unreadable, *read.notes]:
        err.write(f"{line}\n")
    return 0 if read.source else 1
