"""Parse nvidia-smi output into rows the checks can reason about.

Pure functions over text: they run no command and must never raise on odd input, because
nvidia-smi output is not stable across driver versions and any field may read ``[N/A]``,
``[Not Supported]``, ``[Unknown Error]`` or ``[Insufficient Permissions]``. Such a value becomes
``None`` and its raw text is kept, so a check can tell "unknown" from "zero" and a report can show
exactly what the node printed. The command strings the probe runs live here too, beside the
parser that reads them, so the two cannot drift apart.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

#: the GPU fields the probe asks for, in order; the parser reads them by position
GPU_FIELDS: tuple[str, ...] = (
    "index",
    "uuid",
    "name",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
)
APP_FIELDS: tuple[str, ...] = ("pid", "process_name", "used_gpu_memory", "gpu_uuid")

GPU_QUERY = f"nvidia-smi --query-gpu={','.join(GPU_FIELDS)} --format=csv,noheader,nounits"
APPS_QUERY = f"nvidia-smi --query-compute-apps={','.join(APP_FIELDS)} --format=csv,noheader,nounits"
#: the default table: the only place the highest supported CUDA version is printed on every driver
#: (``--query-gpu=cuda_version`` is "not a valid field" before the 550 series)
SUMMARY = "nvidia-smi"

#: the values nvidia-smi prints when it cannot read a field
UNAVAILABLE = frozenset(
    {"[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]", "[GPU is lost]", ""}
)

_UNIT = re.compile(r"\s*(%|MiB|W|C|MHz)\s*$")


@dataclass
class GpuRow:
    """One card from ``GPU_QUERY``; a number is None when the node could not read it."""

    index: int | None
    uuid: str
    name: str
    utilization_gpu: float | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    temperature_c: float | None
    power_w: float | None
    #: nvidia-smi field name -> the exact text printed (kept for evidence)
    raw: dict[str, str] = field(default_factory=dict)


@dataclass
class ProcRow:
    """One compute process from ``APPS_QUERY``."""

    pid: int | None
    process_name: str
    used_memory_mib: float | None
    gpu_uuid: str


def to_number(text: str) -> float | None:
    """A number from one field, tolerating a unit suffix; None for any unavailable marker."""
    value = text.strip()
    if value in UNAVAILABLE or value.startswith("["):
        return None
    try:
        number = float(value)  # the usual case (nounits): no pattern to run
    except ValueError:
        try:
            number = float(_UNIT.sub("", value))
        except ValueError:
            return None
    # nan/inf are not readings a card can report; treat them as unreadable
    return number if math.isfinite(number) else None


def _to_int(text: str) -> int | None:
    number = to_number(text)
    if number is None or number != int(number):
        return None
    return int(number)


def _text(value: str) -> str:
    return "" if value.strip() in UNAVAILABLE else value.strip()


def _split(line: str, expected: int, text_at: int) -> list[str] | None:
    """Split on commas and put back those that belonged to the free-text field at ``text_at``.

    nvidia-smi separates with ", "; splitting on "," and trimming also reads a trailing empty
    field and hand-edited output.
    """
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < expected:
        return None
    extra = len(parts) - expected
    if extra:
        merged = ", ".join(parts[text_at : text_at + extra + 1])
        parts = parts[:text_at] + [merged] + parts[text_at + extra + 1 :]
    return parts


def _raw_rows(
    text: str, fields: tuple[str, ...], free_text: str, what: str, problems: list[str] | None
) -> list[dict[str, str]]:
    """CSV lines as field -> text; ``free_text`` is the one field that may itself contain ", "."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("No running processes"):
            continue
        parts = _split(stripped, len(fields), fields.index(free_text))
        if parts is None:
            if problems is not None:
                problems.append(f"unreadable nvidia-smi {what} line: {stripped[:200]}")
            continue
        out.append(dict(zip(fields, parts, strict=True)))
    return out


def parse_gpu_query(text: str, *, problems: list[str] | None = None) -> list[GpuRow]:
    """Rows of ``GPU_QUERY`` output; lines that cannot be read are reported in ``problems``."""
    return [
        GpuRow(
            index=_to_int(raw["index"]),
            uuid=_text(raw["uuid"]),
            name=_text(raw["name"]),
            utilization_gpu=to_number(raw["utilization.gpu"]),
            memory_used_mib=to_number(raw["memory.used"]),
            memory_total_mib=to_number(raw["memory.total"]),
            temperature_c=to_number(raw["temperature.gpu"]),
            power_w=to_number(raw["power.draw"]),
            raw=raw,
        )
        for raw in _raw_rows(text, GPU_FIELDS, "name", "GPU", problems)
    ]


def parse_apps_query(text: str, *, problems: list[str] | None = None) -> list[ProcRow]:
    """Rows of ``APPS_QUERY`` output (empty output = no process on any card)."""
    return [
        ProcRow(
            pid=_to_int(raw["pid"]),
            process_name=_text(raw["process_name"]),
            used_memory_mib=to_number(raw["used_gpu_memory"]),
            gpu_uuid=_text(raw["gpu_uuid"]),
        )
        for raw in _raw_rows(text, APP_FIELDS, "process_name", "process", problems)
    ]


_CUDA = re.compile(r"CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)")
_DRIVER = re.compile(r"Driver Version\s*:\s*([0-9]+(?:\.[0-9]+)*)")
_NVRM = re.compile(r"NVRM version:.*?\s([0-9]+\.[0-9]+(?:\.[0-9]+)?)\s")


def parse_cuda_version(text: str) -> str | None:
    """The highest CUDA version the driver supports, from the default table or ``-q``."""
    match = _CUDA.search(text)
    return match.group(1) if match else None


def parse_driver_version(text: str) -> str | None:
    """The driver version from the default table or ``-q`` output."""
    match = _DRIVER.search(text)
    return match.group(1) if match else None


def parse_proc_driver_version(text: str) -> str | None:
    """The kernel module version from ``/proc/driver/nvidia/version``."""
    match = _NVRM.search(text + " ")
    return match.group(1) if match else None
