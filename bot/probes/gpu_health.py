"""Read a node's own account of its GPUs' health: lost cards, ECC counters, kernel Xid events.

A card that fell off the PCIe bus, or that the driver can no longer reach, is not in the
``--query-gpu`` rows at all: nvidia-smi prints ``Unable to determine the device handle for
GPU0000:3B:00.0: Unknown Error`` instead (older drivers: ``GPU 0000:…``, or ``GPU is lost.  Reboot
the system to recover this GPU``). Memory errors show in ``nvidia-smi -q -d
ECC,PAGE_RETIREMENT,ROW_REMAPPER``; what happened and when is in the kernel log as ``NVRM: Xid``
lines. These functions turn that text into records keyed by the card's PCI address.

Pure functions over text, like ``bot.probes.nvidia_smi``: they run nothing and never raise. A line
that looks like one of ours but cannot be read is reported in ``problems`` and skipped. What each
Xid *means* is runbook data (the ``xid_codes`` table), not code.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field

from bot.probes.lines import lines_starting_with

#: ECC counters, retired pages and remapped rows of every card (text; the -q layout)
ECC_QUERY = "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"
#: the driver's kernel messages of the current boot with ISO times, the newest 2000: the journal
#: filters on NVRM (Xid, fallen off the bus, init failures) so a chatty kernel costs little; where
#: journalctl is missing, built without pattern matching or not readable, dmesg is read instead
KERNEL_LOG = "journalctl -k --no-pager -o short-iso --grep=NVRM -n 2000"
#: the fallback where there is no journal (or no access to it)
KERNEL_LOG_DMESG = "dmesg --ctime --level=err,warn"

_PCI = re.compile(r"(?<![0-9A-Fa-f])([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-7]))?(?![0-9A-Fa-f])")
_HANDLE = re.compile(
    r"Unable to (?:determine|detect) the device handle for GPU\s*"
    r"(?P<pci>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?)\s*:\s*(?P<why>.*)$"
)
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[^)]*)\):\s*(?P<rest>.*)$")
_XID_CODE = re.compile(r"^(?P<xid>\d+)\s*(?:,\s*(?P<text>.*))?$")
_PID = re.compile(r"^pid=(?P<pid>'?<?[\w-]*>?'?)\s*(?:,\s*|$)")
_NAME = re.compile(r"^name=(?P<name>[^,]*)\s*(?:,\s*|$)")
_ISO = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_BRACKET = re.compile(r"^\[(?P<time>[^\]]+)\]\s?")
_TABLE_GPU = re.compile(
    r"^\|\s*(?P<index>\d+)\s+.*?\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s"
)
_GPU_HEADER = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_MINOR = re.compile(r"minor number (?P<minor>\d+)")


def pci_key(text: str) -> str:
    """A PCI address in one spelling: ``00000000:3B:00.0``, ``0000:3b:00`` -> ``0000:3b:00``.

    The kernel log names a card by domain:bus:device, nvidia-smi adds an 8-digit domain and the
    function; both become the same key. Text with no address gives "".
    """
    match = _PCI.search(text or "")
    if match is None:
        return ""
    domain, bus, device = match.group(1), match.group(2), match.group(3)
    return f"{int(domain, 16) & 0xFFFF:04x}:{bus.lower()}:{device.lower()}"


@dataclass(frozen=True)
class LostGpu:
    """A card the driver could not reach, as nvidia-smi or the kernel reported it."""

    pci: str
    #: the nvidia-smi index, when known (from the table or a ``minor number``)
    index: int | None
    #: where it was seen: ``nvidia-smi`` (handle error), ``query`` ([GPU is lost]), ``table`` (ERR!)
    source: str
    #: the line as printed (evidence)
    text: str


@dataclass(frozen=True)
class XidEvent:
    """One ``NVRM: Xid`` line of the kernel log."""

    pci: str
    xid: int
    time: str
    pid: str
    process: str
    text: str
    raw: str


@dataclass(frozen=True)
class KernelGpuError:
    """A kernel line that says a card fell off the bus or failed to initialise, without an Xid."""

    pci: str
    time: str
    text: str
    #: the /dev/nvidiaN minor number when the line names one instead of an address
    minor: int | None = None


@dataclass
class KernelLog:
    """What the kernel log said about the GPUs."""

    xids: list[XidEvent] = field(default_factory=list)
    errors: list[KernelGpuError] = field(default_factory=list)
    #: lines read (all of them, not only NVRM)
    lines: int = 0


@dataclass(frozen=True)
class EccReading:
    """The memory-health counters of one card (None = the card does not report it: N/A)."""

    pci: str
    ecc_mode: str
    volatile_uncorrected: int | None
    aggregate_uncorrected: int | None
    retired_pending: bool | None
    remapped_pending: bool | None
    remap_failure: bool | None


@dataclass(frozen=True)
class TableGpu:
    """A card's block of the default ``nvidia-smi`` table: its index, address and ERR! cells."""

    index: int
    pci: str
    err_cells: int
    text: str


# -- nvidia-smi ------------------------------------------------------------------------------


def parse_handle_errors(text: str) -> list[LostGpu]:
    """The ``Unable to determine the device handle for GPU…`` lines of any nvidia-smi output."""
    out: list[LostGpu] = []
    seen: set[str] = set()
    if "device handle" not in (text or ""):  # the usual answer: no line to look at (read per node)
        return out
    for line in (text or "").splitlines():
        match = _HANDLE.search(line.strip())
        if match is None:
            continue
        key = pci_key(match.group("pci")) or match.group("pci")
        if key in seen:
            continue
        seen.add(key)
        out.append(LostGpu(pci=key, index=None, source="nvidia-smi", text=line.strip()[:300]))
    return out


def parse_table(text: str) -> list[TableGpu]:
    """Each card of the default table with its PCI address and how many cells read ``ERR!``."""
    out: list[TableGpu] = []
    current: dict[str, object] | None = None
    lines: list[str] = []

    def close() -> None:
        if current is not None:
            block = "\n".join(lines)
            out.append(TableGpu(int(str(current["index"])), str(current["pci"]), block.count("ERR!"), block[:600]))

    for raw in (text or "").splitlines():
        line = raw.rstrip()
        match = _TABLE_GPU.match(line.strip())
        if match is not None:
            close()
            current = {"index": match.group("index"), "pci": pci_key(match.group("bus"))}
            lines = [line]
            continue
        if current is None:
            continue
        if line.startswith("+") or not line.strip() or line.startswith("|=") or "Processes:" in line:
            close()
            current, lines = None, []
            continue
        lines.append(line)
    close()
    return out


def _tree(text: str) -> list[tuple[str, list[tuple[tuple[str, ...], str]]]]:
    """``-q`` output as (card address, [(section path, value)]) per ``GPU xxxx:xx:xx.x`` block.

    Every node's reading goes through here (a fleet-wide node-status parses hundreds of these on
    the event loop), so a line is split at its first colon rather than by a regular expression
    (``key : value``, both stripped) and the section path is kept as a list beside the indents."""
    cards: list[tuple[str, list[tuple[tuple[str, ...], str]]]] = []
    indents: list[int] = []
    names: list[str] = []
    entries: list[tuple[tuple[str, ...], str]] | None = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if indent == 0:
            header = _GPU_HEADER.match(line)
            if header is not None:
                entries = []
                cards.append((pci_key(header.group("bus")), entries))
                indents, names = [], []
            continue
        if entries is None:
            continue
        while indents and indents[-1] >= indent:
            indents.pop()
            names.pop()
        colon = line.find(":")
        if colon <= 0:
            indents.append(indent)
            names.append(line)
            continue
        entries.append(((*names, line[:colon].strip()), line[colon + 1 :].strip()))
    return cards


def _int(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def _yes(value: str) -> bool | None:
    word = value.strip().lower()
    if word in ("yes", "true"):
        return True
    if word in ("no", "false"):
        return False
    return None


def _uncorrected(ecc_errors: list[tuple[tuple[str, ...], str]], scope: str) -> int | None:
    """Uncorrectable errors under ``ECC Errors / scope``: ``Double Bit / Total`` or the sum of
    ``… Uncorrectable …`` counters; None when every counter reads N/A (no ECC on the card)."""
    under = [(p, v) for p, v in ecc_errors if len(p) >= 3 and p[1] == scope]
    double = [(p, v) for p, v in under if p[2].startswith("Double Bit")]
    if double:
        totals = [v for p, v in double if p[-1] == "Total"]
        values = [_int(v) for v in (totals or [v for _, v in double])]
    else:
        values = [_int(v) for p, v in under if "Uncorrectable" in p[-1]]
    numbers = [n for n in values if n is not None]
    return sum(numbers) if numbers else None


def parse_ecc_report(text: str, *, problems: list[str] | None = None) -> list[EccReading]:
    """One reading per card of ``ECC_QUERY`` output, in the layouts of the 418-570 drivers.

    Old cards count ``Single Bit``/``Double Bit`` errors and retire pages; Ampere and newer count
    SRAM/DRAM errors and remap rows. A card that reports neither reads None, not 0.
    """
    out: list[EccReading] = []
    for block in _card_blocks(text or ""):
        reading = _card_reading(block)
        if reading is None:
            if problems is not None:
                problems.append("nvidia-smi -q: a GPU block without a readable PCI address was skipped")
            continue
        out.append(reading)
    return out


def _card_blocks(text: str) -> list[str]:
    """The report cut at each card's ``GPU xxxx:xx:xx.x`` line, without what comes before the
    first (the header, whose timestamp changes on every call)."""
    starts = [at for at, end in lines_starting_with(text, "GPU ") if _GPU_HEADER.match(text[at:end].strip())]
    return [text[a:b] for a, b in itertools.pairwise([*starts, len(text)])]


@functools.lru_cache(maxsize=2048)
def _card_reading(block: str) -> EccReading | None:
    """One card's block read; None when it has no readable address.

    Every node's reading comes through here, hundreds per fleet-wide node-status on the event
    loop, and a card's block changes only when its counters do: healthy cards of one model in
    the same slot print the very same block on every node and every sweep, so a block is read
    once (about 60 us of CPU each) and the frozen reading is shared."""
    cards = _tree(block)
    if not cards or not cards[0][0]:
        return None
    pci, entries = cards[0]
    # one pass sorts the entries by their top section; each question then reads only its own
    sections: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for entry in entries:
        sections.setdefault(entry[0][0], []).append(entry)
    remapped = sections.get("Remapped Rows", [])
    retired = [_yes(v) for p, v in sections.get("Retired Pages", []) if p[-1].startswith("Pending")]
    remapped_pending = [_yes(v) for p, v in remapped if p[-1] == "Pending"]
    failure = [_yes(v) for p, v in remapped if p[-1].startswith("Remapping Failure")]
    ecc_errors = sections.get("ECC Errors", [])
    mode = ""
    for path, value in sections.get("ECC Mode", []):
        if path == ("ECC Mode", "Current"):
            mode = value  # the last one, as a dict of the entries would keep
    return EccReading(
        pci=pci,
        ecc_mode=mode,
        volatile_uncorrected=_uncorrected(ecc_errors, "Volatile"),
        aggregate_uncorrected=_uncorrected(ecc_errors, "Aggregate"),
        retired_pending=next((r for r in retired if r is not None), None),
        remapped_pending=next((r for r in remapped_pending if r is not None), None),
        remap_failure=next((r for r in failure if r is not None), None),
    )


# -- the kernel log --------------------------------------------------------------------------


def _split_time(line: str) -> tuple[str, str]:
    """(time, message) of a journal ``short-iso`` or ``dmesg`` line; the message keeps NVRM: …"""
    match = _ISO.match(line)
    if match is not None:
        rest = line[match.end() :]
        # "HOST kernel: MESSAGE"
        _, sep, message = rest.partition(" kernel: ")
        return match.group("time"), (message if sep else rest)
    match = _BRACKET.match(line)
    if match is not None:
        return match.group("time").strip(), line[match.end() :]
    return "", line


def _xid_event(pci_text: str, rest: str, when: str, raw: str) -> XidEvent | None:
    match = _XID_CODE.match(rest.strip())
    if match is None:
        return None
    text = (match.group("text") or "").strip()
    pid = process = ""
    pid_match = _PID.match(text)
    if pid_match is not None:
        pid = pid_match.group("pid").strip("'")
        text = text[pid_match.end() :]
        name_match = _NAME.match(text)
        if name_match is not None:
            process = name_match.group("name").strip()
            text = text[name_match.end() :]
    return XidEvent(
        pci=pci_key(pci_text) or pci_text.strip(),
        xid=int(match.group("xid")),
        time=when,
        pid=pid,
        process=process,
        text=text.strip()[:300],
        raw=raw.strip()[:400],
    )


def parse_kernel_log(text: str, *, problems: list[str] | None = None) -> KernelLog:
    """Xid events and fallen-off-the-bus / init-failure lines of a kernel log, oldest first.

    Reads ``journalctl -k -o short-iso`` and ``dmesg [--ctime]`` lines alike. Everything that is
    not an NVRM line is only counted.
    """
    log = KernelLog()
    previous: list[str] = []
    for raw in (text or "").splitlines():
        if not raw.strip() or raw.startswith("-- "):
            continue
        log.lines += 1
        when, message = _split_time(raw.strip())
        if "NVRM" not in message:
            previous = []
            continue
        xid = _XID.search(message)
        if xid is not None:
            event = _xid_event(xid.group("pci"), xid.group("rest"), when, raw)
            if event is None:
                if problems is not None:
                    problems.append(f"unreadable Xid line in the kernel log: {raw.strip()[:200]}")
            else:
                log.xids.append(event)
        elif "fallen off the bus" in message:
            pci = pci_key(message) or next((pci_key(p) for p in reversed(previous) if pci_key(p)), "")
            log.errors.append(KernelGpuError(pci=pci, time=when, text=message.strip()[:300]))
        elif "RmInitAdapter failed" in message or "rm_init_adapter failed" in message:
            minor = _MINOR.search(message)
            log.errors.append(
                KernelGpuError(
                    pci=pci_key(message),
                    time=when,
                    text=message.strip()[:300],
                    minor=int(minor.group("minor")) if minor else None,
                )
            )
        previous = (previous + [message])[-2:]
    return log


def has_kernel_lines(text: str) -> bool:
    """Whether a ``journalctl -k`` answer holds any kernel message (not only ``-- No entries --``)."""
    return any(line.strip() and not line.startswith("-- ") for line in (text or "").splitlines())
