"""Render what ``nvidia-smi`` would print for a simulated node, from scenario facts.

The simulator's SSH servers call ``render`` with the argument list of an ``nvidia-smi`` command
line, so that the bot's parsers are tested against the real tool's syntax: any
``--query-gpu`` field list, ``--query-compute-apps``, ``--format=csv[,noheader][,nounits]``,
``-L``, ``-q [-x]`` and the default table. It is pure text generation: it must never run a
process or touch a file.
"""

from __future__ import annotations

import functools
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from bot.sim.scenario import GpuFacts, ProcessFacts

NA = "[N/A]"
USAGE_ERROR = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"


@dataclass(frozen=True)
class _Field:
    """One queryable field: its header text, unit, and where its value comes from."""

    header: str
    unit: str
    #: the GpuFacts attribute (or a synthetic key) whose value it prints
    source: str
    #: how a number is printed
    fmt: str = "int"


def _gpu_field(name: str, unit: str, source: str, fmt: str = "int") -> _Field:
    header = f"{name} [{unit}]" if unit else name
    return _Field(header, unit, source, fmt)


# Field names as ``nvidia-smi --help-query-gpu`` lists them; aliases map to the same facts.
_GPU_FIELDS: dict[str, _Field] = {
    "timestamp": _gpu_field("timestamp", "", "timestamp", "text"),
    "driver_version": _gpu_field("driver_version", "", "driver", "text"),
    "count": _gpu_field("count", "", "count", "text"),
    "name": _gpu_field("name", "", "name", "text"),
    "serial": _gpu_field("serial", "", "serial", "text"),
    "uuid": _gpu_field("uuid", "", "uuid", "text"),
    "index": _gpu_field("index", "", "index", "text"),
    "pci.bus_id": _gpu_field("pci.bus_id", "", "bus_id", "text"),
    "pstate": _gpu_field("pstate", "", "pstate", "text"),
    "compute_mode": _gpu_field("compute_mode", "", "compute_mode", "text"),
    "persistence_mode": _gpu_field("persistence_mode", "", "persistence_mode", "text"),
    "fan.speed": _gpu_field("fan.speed", "%", "fan", "text"),
    "utilization.gpu": _gpu_field("utilization.gpu", "%", "utilization_gpu"),
    "utilization.memory": _gpu_field("utilization.memory", "%", "utilization_memory"),
    "memory.total": _gpu_field("memory.total", "MiB", "memory_total_mib"),
    "memory.used": _gpu_field("memory.used", "MiB", "memory_used_mib"),
    "memory.free": _gpu_field("memory.free", "MiB", "memory_free_mib"),
    "temperature.gpu": _gpu_field("temperature.gpu", "", "temperature_c"),
    "power.draw": _gpu_field("power.draw", "W", "power_w", "2f"),
    "power.limit": _gpu_field("power.limit", "W", "power_limit", "2f"),
    "enforced.power.limit": _gpu_field("enforced.power.limit", "W", "power_limit", "2f"),
    "clocks.sm": _gpu_field("clocks.sm", "MHz", "clock_sm"),
    "vbios_version": _gpu_field("vbios_version", "", "vbios", "text"),
}
_GPU_ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_serial": "serial",
    "pci.bus_id": "pci.bus_id",
    "gpu_bus_id": "pci.bus_id",
    "temperature.gpu": "temperature.gpu",
    "clocks.current.sm": "clocks.sm",
}

_APP_FIELDS: dict[str, _Field] = {
    "timestamp": _gpu_field("timestamp", "", "timestamp", "text"),
    "gpu_name": _gpu_field("gpu_name", "", "gpu_name", "text"),
    "gpu_bus_id": _gpu_field("gpu_bus_id", "", "gpu_bus_id", "text"),
    "gpu_serial": _gpu_field("gpu_serial", "", "gpu_serial", "text"),
    "gpu_uuid": _gpu_field("gpu_uuid", "", "gpu_uuid", "text"),
    "pid": _gpu_field("pid", "", "pid", "text"),
    "process_name": _gpu_field("process_name", "", "name", "text"),
    "used_gpu_memory": _gpu_field("used_gpu_memory", "MiB", "used_memory_mib"),
}
_APP_ALIASES = {"name": "process_name", "used_memory": "used_gpu_memory"}

#: GpuFacts.raw may be keyed by the nvidia-smi field name or by the GpuFacts attribute
_RAW_ATTR = {
    "utilization.gpu": "utilization_gpu",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
}


def _bus_id(gpu: GpuFacts) -> str:
    """The card's bus id as nvidia-smi prints it (8-digit domain, upper-case hex)."""
    if gpu.bus_id:
        parts = gpu.bus_id.strip().split(":")
        if len(parts) == 3:
            return f"{int(parts[0] or '0', 16):08X}:{parts[1].upper()}:{parts[2].upper()}"
        return gpu.bus_id
    return f"00000000:{(0x1A + gpu.index) % 256:02X}:00.0"


def _handle_error(gpu: GpuFacts, driver: str) -> str:
    """The line nvidia-smi prints for a card whose handle NVML cannot get.

    Drivers from the 525 series print ``GPU0000:3B:00.0``; older ones ``GPU 0000:3B:00.0``.
    """
    bus = _bus_id(gpu)
    short = bus[4:] if len(bus) > 12 else bus
    try:
        major = int(driver.split(".")[0])
    except ValueError:
        major = 535
    gap = "" if major >= 525 else " "
    return f"Unable to determine the device handle for GPU{gap}{short}: {gpu.lost}\n"


#: display types ``-q -d`` accepts (nvidia-smi --help); only the health ones print sections here
_DISPLAY_TYPES = frozenset(
    {
        "MEMORY", "UTILIZATION", "ECC", "TEMPERATURE", "POWER", "CLOCK", "COMPUTE", "PIDS",
        "PERFORMANCE", "SUPPORTED_CLOCKS", "PAGE_RETIREMENT", "ACCOUNTING", "ENCODER_STATS",
        "SUPPORTED_GPU_TARGET_TEMP", "VOLTAGE", "FBC_STATS", "ROW_REMAPPER", "RESET_STATUS",
        "GSP_FIRMWARE_VERSION",
    }
)
_AMPERE_AND_NEWER = ("A100", "A30", "A10", "A40", "A800", "H100", "H200", "H800", "H20", "L40", "L4", "B200", "GH200")


def _ecc_style(gpu: GpuFacts) -> str:
    """How the card reports memory health: ``rows`` (row remapping), ``pages`` (page retirement),
    ``none`` (consumer cards without ECC)."""
    name = gpu.name.upper()
    if "GEFORCE" in name or "TITAN" in name:
        return "none"
    if any(model in name for model in _AMPERE_AND_NEWER):
        return "rows"
    return "pages"


@functools.lru_cache(maxsize=4096)
def _kv(indent: int, key: str, value: object) -> str:
    return f"{' ' * indent}{key:<{42 - indent}}: {value}"


def _ecc_sections(gpu: GpuFacts, display: set[str]) -> list[str]:
    style = _ecc_style(gpu)
    volatile = gpu.ecc_volatile_uncorrected
    no_ecc = style == "none" or volatile is None
    aggregate = volatile if gpu.ecc_aggregate_uncorrected is None else gpu.ecc_aggregate_uncorrected
    out: list[str] = []
    if "ECC" in display:
        mode = "N/A" if style == "none" else ("Disabled" if volatile is None else "Enabled")
        out += ["    ECC Mode", _kv(8, "Current", mode), _kv(8, "Pending", mode), "    ECC Errors"]
        for scope, count in (("Volatile", volatile), ("Aggregate", aggregate)):
            out.append(f"        {scope}")
            if style == "rows":
                value = "N/A" if no_ecc else count or 0
                out += [
                    _kv(12, "SRAM Correctable", "N/A" if no_ecc else 0),
                    _kv(12, "SRAM Uncorrectable", "N/A" if no_ecc else 0),
                    _kv(12, "DRAM Correctable", "N/A" if no_ecc else 0),
                    _kv(12, "DRAM Uncorrectable", value),
                ]
            else:
                for kind, n in (("Single Bit", 0), ("Double Bit", count or 0)):
                    cell = "N/A" if no_ecc else n
                    out += [
                        f"            {kind}            ",
                        _kv(16, "Device Memory", cell),
                        _kv(16, "Register File", "N/A" if no_ecc else 0),
                        _kv(16, "L1 Cache", "N/A" if no_ecc else 0),
                        _kv(16, "L2 Cache", "N/A" if no_ecc else 0),
                        _kv(16, "Texture Memory", "N/A"),
                        _kv(16, "Texture Shared", "N/A"),
                        _kv(16, "CBU", "N/A"),
                        _kv(16, "Total", cell),
                    ]
    if "PAGE_RETIREMENT" in display:
        if style == "pages" and not no_ecc:
            out += [
                "    Retired Pages",
                _kv(8, "Single Bit ECC", 0),
                _kv(8, "Double Bit ECC", 1 if (aggregate or 0) > 0 else 0),
                _kv(8, "Pending Page Blacklist", "Yes" if gpu.retired_pages_pending else "No"),
            ]
        else:
            out += ["    Retired Pages", _kv(8, "Single Bit ECC", "N/A"), _kv(8, "Double Bit ECC", "N/A"),
                    _kv(8, "Pending Page Blacklist", "N/A")]
    if "ROW_REMAPPER" in display:
        if style == "rows" and not no_ecc:
            out += [
                "    Remapped Rows",
                _kv(8, "Correctable Error", 0),
                _kv(8, "Uncorrectable Error", aggregate or 0),
                _kv(8, "Pending", "Yes" if gpu.remapped_rows_pending else "No"),
                _kv(8, "Remapping Failure Occurred", "Yes" if gpu.remapping_failure else "No"),
                "        Bank Remap Availability Histogram",
                _kv(12, "Max", "639 bank(s)" if aggregate else "640 bank(s)"),
                _kv(12, "High", "1 bank(s)" if aggregate else "0 bank(s)"),
                _kv(12, "Partial", "0 bank(s)"),
                _kv(12, "Low", "0 bank(s)"),
                _kv(12, "None", "0 bank(s)"),
            ]
        else:
            out.append(_kv(4, "Remapped Rows", "N/A"))
    return out


def _query_header(gpus: list[GpuFacts], driver: str, cuda: str) -> list[str]:
    """The lines ``nvidia-smi -q`` prints before the first card."""
    return [
        "",
        "==============NVSMI LOG==============",
        "",
        f"Timestamp                                 : {time.strftime('%a %b %d %H:%M:%S %Y', time.gmtime())}",
        f"Driver Version                            : {driver or 'N/A'}",
        f"CUDA Version                              : {cuda or 'N/A'}",
        "",
        f"Attached GPUs                             : {len(gpus)}",
    ]


def _query_display(gpus: list[GpuFacts], driver: str, cuda: str, display: set[str]) -> str:
    """``nvidia-smi -q -d TYPES``: the header, then each card's sections of those types."""
    lines = _query_header(gpus, driver, cuda)
    for gpu in gpus:
        lines.append(f"GPU {_bus_id(gpu)}")
        lines += _ecc_sections(gpu, display)
        lines.append("")
    return "\n".join(lines) + "\n"


#: raw values that mean the driver could not read the card; the table shows them as ERR!
_ERROR_MARKERS = frozenset({"[GPU is lost]", "[Unknown Error]"})
_RAW_FIELD = {attr: name for name, attr in _RAW_ATTR.items()}


def _err_or(broken: set[str], attr: str, text: str) -> str:
    """``ERR!`` where the card's reading of ``attr`` is an error marker, as the table prints it."""
    return "ERR!" if attr in broken or _RAW_FIELD.get(attr, "") in broken else text


def _number(value: float, fmt: str) -> str:
    return f"{value:.2f}" if fmt == "2f" else str(int(round(value)))


def _memory_free(gpu: GpuFacts) -> float | None:
    if gpu.memory_total_mib is None or gpu.memory_used_mib is None:
        return None
    return max(gpu.memory_total_mib - gpu.memory_used_mib, 0)


#: fields nvidia-smi derives rather than reads from the card's facts: (card, driver, card count)
_SYNTHETIC: dict[str, Callable[[GpuFacts, str, int], float | str | None]] = {
    "timestamp": lambda gpu, driver, count: time.strftime("%Y/%m/%d %H:%M:%S.000", time.gmtime()),
    "driver": lambda gpu, driver, count: driver or None,
    "count": lambda gpu, driver, count: str(count),
    "serial": lambda gpu, driver, count: f"{1560000000000 + gpu.index}",
    "index": lambda gpu, driver, count: str(gpu.index),
    "bus_id": lambda gpu, driver, count: _bus_id(gpu),
    "pstate": lambda gpu, driver, count: "P0" if (gpu.utilization_gpu or 0) > 0 else "P8",
    "compute_mode": lambda gpu, driver, count: "Default",
    "persistence_mode": lambda gpu, driver, count: "Enabled",
    "fan": lambda gpu, driver, count: None,
    "utilization_memory": lambda gpu, driver, count: (
        None if gpu.utilization_gpu is None else min(gpu.utilization_gpu, 100)
    ),
    "memory_free_mib": lambda gpu, driver, count: _memory_free(gpu),
    "power_limit": lambda gpu, driver, count: 300.0,
    "clock_sm": lambda gpu, driver, count: 1530 if (gpu.utilization_gpu or 0) > 0 else 135,
    "vbios": lambda gpu, driver, count: "88.00.4F.00.09",
}


def _gpu_value(gpu: GpuFacts, source: str, *, driver: str, count: int) -> float | str | None:
    """The value of one field for one card; None prints as [N/A]."""
    synthetic = _SYNTHETIC.get(source)
    if synthetic is not None:
        return synthetic(gpu, driver, count)
    value = getattr(gpu, source)
    return value if value is None or isinstance(value, str) else float(value)


def _cell(value: float | str | None, spec: _Field, *, units: bool) -> str:
    if value is None:
        return NA
    if isinstance(value, str):
        return value
    text = _number(value, spec.fmt)
    return f"{text} {spec.unit}" if units and spec.unit else text


@dataclass(frozen=True)
class _Format:
    """The ``--format=csv[,noheader][,nounits]`` options, which change the text the parsers must read."""

    header: bool = True
    units: bool = True


def _parse_format(value: str) -> _Format | None:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or parts[0] != "csv" or any(p not in ("csv", "noheader", "nounits") for p in parts):
        return None
    return _Format(header="noheader" not in parts, units="nounits" not in parts)


@dataclass
class _Args:
    """The simulated ``nvidia-smi`` command line, parsed as the real tool parses it, so a query the
    real one would refuse is refused here too."""

    query_gpu: str | None = None
    query_apps: str | None = None
    fmt: str | None = None
    ids: str | None = None
    list_gpus: bool = False
    query: bool = False
    xml: bool = False
    display: str | None = None


def _parse_args(args: list[str]) -> _Args | None:
    """Read the options this emulation knows; None when the real tool would print usage."""
    out = _Args()
    valued = {
        "--query-gpu": "query_gpu",
        "--query-compute-apps": "query_apps",
        "--format": "fmt",
        "--id": "ids",
        "-i": "ids",
        "-d": "display",
        "--display": "display",
    }
    flags = {
        "-L": "list_gpus",
        "--list-gpus": "list_gpus",
        "-q": "query",
        "--query": "query",
        "-x": "xml",
        "--xml-format": "xml",
    }
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in valued:
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            setattr(out, valued[name], value)
        elif arg in flags:
            setattr(out, flags[arg], True)
        else:
            return None
        i += 1
    return out


def _select(gpus: list[GpuFacts], ids: str | None) -> list[GpuFacts] | None:
    if ids is None:
        return list(gpus)
    chosen = []
    for wanted in ids.split(","):
        match = [g for g in gpus if str(g.index) == wanted or g.uuid == wanted or _bus_id(g) == wanted]
        if not match:
            return None
        chosen.extend(match)
    return chosen


def _resolve(names: list[str], table: dict[str, _Field], aliases: dict[str, str]) -> list[str] | str:
    """Canonical field names, or the first unknown name."""
    out = []
    for raw in names:
        name = aliases.get(raw, raw)
        if name not in table:
            return raw
        out.append(name)
    return out


def _query_gpu(
    fields: str, fmt: _Format, gpus: list[GpuFacts], driver: str, count: int
) -> tuple[str, str, int]:
    names = [f.strip() for f in fields.split(",")]
    resolved = _resolve(names, _GPU_FIELDS, _GPU_ALIASES)
    if isinstance(resolved, str):
        return f'Field "{resolved}" is not a valid field to query.\n\n', "", 2
    lines = []
    if fmt.header:
        lines.append(", ".join(_GPU_FIELDS[n].header for n in resolved))
    for gpu in gpus:
        cells = []
        for n in resolved:
            spec = _GPU_FIELDS[n]
            raw = gpu.raw.get(n, gpu.raw.get(_RAW_ATTR.get(n, spec.source)))
            if raw is not None:
                cells.append(raw)
            else:
                cells.append(
                    _cell(_gpu_value(gpu, spec.source, driver=driver, count=count), spec, units=fmt.units)
                )
        lines.append(", ".join(cells))
    return "".join(line + "\n" for line in lines), "", 0


def _query_apps(
    fields: str, fmt: _Format, gpus: list[GpuFacts], processes: list[ProcessFacts]
) -> tuple[str, str, int]:
    names = [f.strip() for f in fields.split(",")]
    resolved = _resolve(names, _APP_FIELDS, _APP_ALIASES)
    if isinstance(resolved, str):
        return f'Field "{resolved}" is not a valid field to query.\n\n', "", 2
    by_uuid = {g.uuid: g for g in gpus}
    lines = []
    if fmt.header:
        lines.append(", ".join(_APP_FIELDS[n].header for n in resolved))
    for proc in processes:
        gpu = by_uuid.get(proc.gpu_uuid)
        if gpu is None:
            continue
        values: dict[str, float | str | None] = {
            "timestamp": time.strftime("%Y/%m/%d %H:%M:%S.000", time.gmtime()),
            "gpu_name": gpu.name,
            "gpu_bus_id": _bus_id(gpu),
            "gpu_serial": f"{1560000000000 + gpu.index}",
            "gpu_uuid": gpu.uuid,
            "pid": str(proc.pid),
            "name": proc.name,
            "used_memory_mib": None if proc.used_memory_mib is None else float(proc.used_memory_mib),
        }
        lines.append(
            ", ".join(_cell(values[_APP_FIELDS[n].source], _APP_FIELDS[n], units=fmt.units) for n in resolved)
        )
    return "".join(line + "\n" for line in lines), "", 0


def _list(gpus: list[GpuFacts]) -> str:
    return "".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in gpus)


def _text(value: float | None, unit: str, fmt: str = "int") -> str:
    return "N/A" if value is None else f"{_number(value, fmt)} {unit}".strip()


def _xml(gpus: list[GpuFacts], processes: list[ProcessFacts], driver: str, cuda: str) -> str:
    root = ET.Element("nvidia_smi_log")
    ET.SubElement(root, "timestamp").text = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime())
    ET.SubElement(root, "driver_version").text = driver or "N/A"
    ET.SubElement(root, "cuda_version").text = cuda or "N/A"
    ET.SubElement(root, "attached_gpus").text = str(len(gpus))
    for gpu in gpus:
        node = ET.SubElement(root, "gpu", id=_bus_id(gpu))
        ET.SubElement(node, "product_name").text = gpu.name
        ET.SubElement(node, "uuid").text = gpu.uuid
        ET.SubElement(node, "minor_number").text = str(gpu.index)
        mem = ET.SubElement(node, "fb_memory_usage")
        free = (
            None
            if gpu.memory_total_mib is None or gpu.memory_used_mib is None
            else max(gpu.memory_total_mib - gpu.memory_used_mib, 0)
        )
        ET.SubElement(mem, "total").text = _text(gpu.memory_total_mib, "MiB")
        ET.SubElement(mem, "used").text = _text(gpu.memory_used_mib, "MiB")
        ET.SubElement(mem, "free").text = _text(free, "MiB")
        ET.SubElement(ET.SubElement(node, "utilization"), "gpu_util").text = _text(gpu.utilization_gpu, "%")
        ET.SubElement(ET.SubElement(node, "temperature"), "gpu_temp").text = _text(gpu.temperature_c, "C")
        power = ET.SubElement(node, "gpu_power_readings")
        ET.SubElement(power, "power_draw").text = _text(gpu.power_w, "W", "2f")
        procs = ET.SubElement(node, "processes")
        for proc in processes:
            if proc.gpu_uuid != gpu.uuid:
                continue
            info = ET.SubElement(procs, "process_info")
            ET.SubElement(info, "pid").text = str(proc.pid)
            ET.SubElement(info, "type").text = "C"
            ET.SubElement(info, "process_name").text = proc.name
            ET.SubElement(info, "used_memory").text = _text(proc.used_memory_mib, "MiB")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n' + body + "\n"


def _query_text(gpus: list[GpuFacts], driver: str, cuda: str) -> str:
    lines = _query_header(gpus, driver, cuda)
    for gpu in gpus:
        lines += [
            f"GPU {_bus_id(gpu)}",
            f"    Product Name                          : {gpu.name}",
            f"    GPU UUID                              : {gpu.uuid}",
            f"    Minor Number                          : {gpu.index}",
            "    FB Memory Usage",
            f"        Total                             : {_text(gpu.memory_total_mib, 'MiB')}",
            f"        Used                              : {_text(gpu.memory_used_mib, 'MiB')}",
            "    Utilization",
            f"        Gpu                               : {_text(gpu.utilization_gpu, '%')}",
            "    Temperature",
            f"        GPU Current Temp                  : {_text(gpu.temperature_c, 'C')}",
            "    GPU Power Readings",
            f"        Power Draw                        : {_text(gpu.power_w, 'W', '2f')}",
        ]
    return "\n".join(lines) + "\n\n"


def _table(gpus: list[GpuFacts], processes: list[ProcessFacts], driver: str, cuda: str) -> str:
    """The default output, laid out like the 535-series driver prints it."""
    width = 85
    rule = "+" + "-" * (width + 2) + "+"

    def row(text: str) -> str:
        return f"| {text:<{width}} |"

    version = driver or "N/A"
    out = [
        time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime()),
        rule,
        row(f"NVIDIA-SMI {version}   Driver Version: {version}   CUDA Version: {cuda or 'N/A'}"),
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
    ]
    for gpu in gpus:
        broken = {k for k, v in gpu.raw.items() if v.strip() in _ERROR_MARKERS}
        temp = _err_or(broken, "temperature_c", _text(gpu.temperature_c, "C").replace(" ", ""))
        power = _err_or(broken, "power_w", _text(gpu.power_w, "W").replace(" ", ""))
        used = _err_or(broken, "memory_used_mib", _text(gpu.memory_used_mib, "MiB").replace(" ", ""))
        total = _text(gpu.memory_total_mib, "MiB").replace(" ", "")
        util = _err_or(broken, "utilization_gpu", _text(gpu.utilization_gpu, "%").replace(" ", ""))
        pstate = "P0" if (gpu.utilization_gpu or 0) > 0 else "P8"
        ecc = "N/A" if _ecc_style(gpu) == "none" or gpu.ecc_volatile_uncorrected is None else str(
            gpu.ecc_volatile_uncorrected
        )
        ecc = "ERR!" if broken else ecc
        out += [
            f"| {gpu.index:>3}  {gpu.name[:20]:<20}           On  | {_bus_id(gpu)} Off |{ecc:>21} |",
            f"| N/A  {temp:>4}    {pstate}  {power + ' / 300W':>22} | {used + ' / ' + total:>20} |"
            f" {util:>7}      Default |",
            "|                                         |                      |                  N/A |",
            "+-----------------------------------------+----------------------+----------------------+",
        ]
    out += [
        "",
        rule,
        row("Processes:"),
        row(" GPU   GI   CI        PID   Type   Process name                            GPU Memory"),
        row("       ID   ID                                                             Usage"),
        "|" + "=" * (width + 2) + "|",
    ]
    by_uuid = {g.uuid: g for g in gpus}
    shown = [p for p in processes if p.gpu_uuid in by_uuid]
    if not shown:
        out.append(row(" No running processes found"))
    for proc in shown:
        mem = "N/A" if proc.used_memory_mib is None else f"{int(round(proc.used_memory_mib))}MiB"
        index = by_uuid[proc.gpu_uuid].index
        out.append(row(f"{index:>4}   N/A  N/A  {proc.pid:>9}      C   {proc.name[:38]:<38}{mem:>10}"))
    out.append(rule)
    return "\n".join(out) + "\n"


def render(
    args: list[str],
    gpus: list[GpuFacts],
    processes: list[ProcessFacts],
    driver: str,
    cuda: str,
) -> tuple[str, str, int]:
    """What ``nvidia-smi ARGS`` prints: ``(stdout, stderr, exit status)``."""
    parsed = _parse_args(args)
    if parsed is None:
        return USAGE_ERROR, "", 2
    if not gpus:
        return "No devices were found\n", "", 6
    selected = _select(gpus, parsed.ids)
    if selected is None:
        return f"No devices were found matching the id {parsed.ids!r}.\n", "", 6
    display: set[str] = set()
    if parsed.display is not None:
        display = {d.strip().upper() for d in parsed.display.split(",") if d.strip()}
        if not parsed.query or not display or not display <= _DISPLAY_TYPES:
            return USAGE_ERROR, "", 2
    lost = [g for g in selected if g.lost]
    if lost:
        # NVML cannot enumerate the cards when one has no handle: nvidia-smi prints only that
        # (15 = "GPU has fallen off the bus or has otherwise become inaccessible", 255 = other)
        status = 15 if any("lost" in g.lost.lower() for g in lost) else 255
        return "".join(_handle_error(g, driver) for g in lost), "", status
    if parsed.query_gpu is not None or parsed.query_apps is not None:
        if parsed.query_gpu is not None and parsed.query_apps is not None:
            return USAGE_ERROR, "", 2
        if parsed.fmt is None:
            return "'--format' option is required.\n", "", 2
        fmt = _parse_format(parsed.fmt)
        if fmt is None:
            return f'"{parsed.fmt}" is not a valid format.\n', "", 2
        if parsed.query_gpu is not None:
            return _query_gpu(parsed.query_gpu, fmt, selected, driver, len(gpus))
        return _query_apps(parsed.query_apps or "", fmt, selected, processes)
    if parsed.fmt is not None:
        return USAGE_ERROR, "", 2
    if parsed.list_gpus:
        return _list(selected), "", 0
    if parsed.query:
        if parsed.xml:
            return _xml(selected, processes, driver, cuda), "", 0
        if display:
            return _query_display(selected, driver, cuda, display), "", 0
        return _query_text(selected, driver, cuda), "", 0
    if parsed.xml:
        return USAGE_ERROR, "", 2
    return _table(selected, processes, driver, cuda), "", 0
