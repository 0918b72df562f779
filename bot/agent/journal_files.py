"""Kernel messages from systemd journal files, read in pure Python (no journalctl, no libsystemd).

The node agent's image has no ``journalctl`` (and python-systemd needs libsystemd and a compiler
to install), but the host's journal directory can be mounted read-only. The file format is
documented and stable (systemd's docs/JOURNAL_FILE_FORMAT.md): a header, then 8-byte aligned
objects, each starting with its type and size. Reading only what the kernel-log read needs is
small:

1. search the file's bytes for the pattern (``NVRM``) and for ``_TRANSPORT=kernel``; a hit counts
   only where it lies in the payload of an uncompressed DATA object (checked from the object
   header at the payload's fixed offset before the ``MESSAGE=`` that precedes the hit);
2. for each such message, follow its entries (the first one, then its chain of entry arrays) and
   keep the ones of the wanted boot that carry ``_TRANSPORT=kernel``.

A file of journald's usual 128 MiB is one C-speed scan, not a Python walk over a million objects,
so a read stays within the node deadline. Both layouts are read: the regular one and the
``compact`` one (systemd 252+: 32-bit offsets). Compressed payloads are not read: journald
compresses only fields above 512 bytes, which a kernel line is not.
A file that ends in the middle of an object (the journal is written while we read) is read up
to there. Never raises for a bad file: it says what it could not read in ``problems``.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SIGNATURE = b"LPKSHHRH"
#: header fields used here (offsets from JOURNAL_FILE_FORMAT.md's ``struct Header``)
_INCOMPATIBLE = 12
_HEADER_SIZE = 88
_ARENA_SIZE = 96
_TAIL_OBJECT = 136
_TAIL_REALTIME = 192
#: incompatible flag: 32-bit offsets in entries and entry arrays, two more fields in DATA
COMPACT = 1 << 4
#: object types
DATA, ENTRY, ENTRY_ARRAY = 1, 3, 6
#: the longest message journald stores uncompressed is far shorter; a hit further than this from
#: its field's start is not looked for
MAX_MESSAGE = 64 << 10
_OBJECT_HEADER = struct.Struct("<BB6xQ")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_KERNEL = b"_TRANSPORT=kernel"
_MESSAGE = b"MESSAGE="


@dataclass(frozen=True)
class JournalLine:
    """One kernel message: when (µs since the epoch), which boot, the text."""

    realtime_us: int
    boot_id: str
    message: str


@dataclass
class JournalRead:
    """What the files gave, and what could not be read."""

    lines: list[JournalLine] = field(default_factory=list)
    files: int = 0
    #: files skipped because their last entry is older than the boot
    older: int = 0
    problems: list[str] = field(default_factory=list)


class _File:
    """One mapped journal file and the layout its header announces."""

    def __init__(self, data: mmap.mmap | bytes) -> None:
        self.data = data
        if len(data) < 208 or data[:8] != SIGNATURE:
            raise ValueError("not a journal file (no LPKSHHRH signature)")
        self.compact = bool(_U32.unpack_from(data, _INCOMPATIBLE)[0] & COMPACT)
        self.header_size = _U64.unpack_from(data, _HEADER_SIZE)[0]
        arena = _U64.unpack_from(data, _ARENA_SIZE)[0]
        self.end = min(len(data), self.header_size + arena)
        self.tail = _U64.unpack_from(data, _TAIL_OBJECT)[0]
        self.tail_realtime_us = _U64.unpack_from(data, _TAIL_REALTIME)[0]

    def entries_of(self, data_at: int) -> Iterator[int]:
        """Offsets of the entries that reference the DATA object at ``data_at``."""
        first, array, count = struct.unpack_from("<Q Q Q", self.data, data_at + 40)
        if first:
            yield first
        width = _U32 if self.compact else _U64
        left, seen = count - (1 if first else 0), 0
        while array and left > 0 and seen < 1_000_000:
            kind, _, size = _OBJECT_HEADER.unpack_from(self.data, array)
            if kind != ENTRY_ARRAY or array + size > self.end:
                return
            nxt = _U64.unpack_from(self.data, array + 16)[0]
            for item_at in range(array + 24, array + size - width.size + 1, width.size):
                offset = width.unpack_from(self.data, item_at)[0]
                if offset == 0 or left <= 0:
                    break
                left -= 1
                seen += 1
                yield offset
            array = nxt

    def entry(self, at: int) -> tuple[int, str, set[int]] | None:
        """(realtime µs, boot id, offsets of its DATA objects) of the ENTRY object at ``at``."""
        if at + 64 > self.end:
            return None
        kind, _, size = _OBJECT_HEADER.unpack_from(self.data, at)
        if kind != ENTRY or at + size > self.end:
            return None
        realtime = _U64.unpack_from(self.data, at + 24)[0]
        boot = bytes(self.data[at + 40 : at + 56]).hex()
        step = 4 if self.compact else 16
        width = _U32 if self.compact else _U64
        items = {width.unpack_from(self.data, i)[0] for i in range(at + 64, at + size - step + 1, step)}
        return realtime, boot, items


def _data_at(journal: _File, at: int, reaches: int) -> bool:
    """Whether an uncompressed DATA object starts at ``at`` and its payload reaches ``reaches``."""
    if at < journal.header_size or at % 8 or at + _OBJECT_HEADER.size > journal.end:
        return False
    kind, flags, size = _OBJECT_HEADER.unpack_from(journal.data, at)
    return kind == DATA and not flags and at + size <= journal.end and at + size >= reaches


def _payload_start(journal: _File) -> int:
    return 72 if journal.compact else 64


def _kernel_transport(journal: _File) -> int:
    """The offset of the DATA object ``_TRANSPORT=kernel`` (one per file: data is deduplicated)."""
    skip = _payload_start(journal)
    pos = journal.data.find(_KERNEL, journal.header_size)
    while pos >= 0:
        at = pos - skip
        if _data_at(journal, at, pos + len(_KERNEL)) and _U64.unpack_from(journal.data, at + 8)[0] == skip + len(
            _KERNEL
        ):
            return at
        pos = journal.data.find(_KERNEL, pos + 1)
    return 0


def _messages_with(journal: _File, pattern: bytes) -> Iterator[tuple[int, str]]:
    """(offset, text) of every uncompressed ``MESSAGE=`` DATA object whose payload contains
    ``pattern``: the bytes are searched (in C), and only the hits are looked at in Python, so a
    128 MiB file costs one scan, not a walk over its million objects."""
    skip, seen = _payload_start(journal), set()
    pos = journal.data.find(pattern, journal.header_size)
    while pos >= 0:
        field_at = journal.data.rfind(_MESSAGE, max(journal.header_size, pos - MAX_MESSAGE), pos)
        at = field_at - skip
        if field_at >= 0 and at not in seen and _data_at(journal, at, pos + len(pattern)):
            seen.add(at)
            size = _U64.unpack_from(journal.data, at + 8)[0]
            yield at, bytes(journal.data[field_at + len(_MESSAGE) : at + size]).decode("utf-8", "replace")
        pos = journal.data.find(pattern, pos + 1)


def read_file(data: mmap.mmap | bytes, pattern: bytes, boot_id: str | None) -> list[JournalLine]:
    """The kernel messages containing ``pattern`` in one file's bytes, of boot ``boot_id`` (every
    boot when None)."""
    journal = _File(data)
    kernel_at = _kernel_transport(journal)
    lines = []
    if kernel_at:
        for data_at, text in _messages_with(journal, pattern):
            for entry_at in journal.entries_of(data_at):
                entry = journal.entry(entry_at)
                if entry is None:
                    continue
                realtime, boot, items = entry
                if kernel_at in items and (boot_id is None or boot == boot_id):
                    lines.append(JournalLine(realtime, boot, text))
    return lines


def journal_files(directory: Path) -> list[Path]:
    """The system journal files under ``directory`` (itself and its machine-id folders), online
    and archived (``.journal``) and those journald set aside as dirty (``.journal~``); newest first.
    User journals (``user-UID``) hold no kernel messages."""
    found: list[Path] = []
    for folder in (directory, *sorted(p for p in directory.iterdir() if p.is_dir())):
        found += [p for p in folder.glob("system*.journal*") if p.name.endswith((".journal", ".journal~"))]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def read_directory(
    directory: Path, *, pattern: bytes = b"NVRM", boot_id: str | None = None, since_us: int = 0,
    byte_budget: int = 512 << 20,
) -> JournalRead:
    """Kernel messages containing ``pattern`` from every system journal file under ``directory``,
    oldest first. Files whose last entry is older than ``since_us`` (the boot) are skipped unread;
    at most ``byte_budget`` bytes of files are read, newest first (a note says when more were
    left). Raises ``OSError`` only when the directory itself cannot be listed."""
    out = JournalRead()
    files = journal_files(directory)
    if not files:
        raise FileNotFoundError(f"no system journal files in {directory}")
    spent = 0
    for path in files:
        try:
            size = path.stat().st_size
            if spent + size > byte_budget:
                out.problems.append(f"{path.name} and older journal files not read (over {byte_budget >> 20} MiB)")
                break
            with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if since_us and len(data) >= 208 and _U64.unpack_from(data, _TAIL_REALTIME)[0] < since_us:
                    out.older += 1
                    continue
                lines = read_file(data, pattern, boot_id)
        except (OSError, ValueError, struct.error) as exc:
            out.problems.append(f"{path.name}: {getattr(exc, 'strerror', None) or exc}")
            continue
        spent += size
        out.files += 1
        out.lines += lines
    out.lines.sort(key=lambda line: line.realtime_us)
    return out


def current_boot_id(proc: Path = Path("/proc")) -> str | None:
    """The running kernel's boot id as the journal stores it (32 hex digits), or None. /proc's
    boot id is not per-namespace: in a container it is the host's."""
    try:
        return (proc / "sys/kernel/random/boot_id").read_text().strip().replace("-", "").lower() or None
    except OSError:
        return None


def boot_time_us(proc: Path = Path("/proc")) -> int:
    """When the host booted (µs since the epoch), from /proc/stat's btime; 0 when unknown."""
    try:
        for line in (proc / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return int(line.split()[1]) * 1_000_000
    except (OSError, ValueError, IndexError):
        pass
    return 0

