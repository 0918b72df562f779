"""The compact monospace table of ``node-status``: logical allocation beside the physical cards.

Rows come from ``Report.nodes`` (typed ``NodeRow``s). A reading is ``None`` when a probe was
skipped, so each cell falls back to ``-``; this module never reads anything but the rows it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.report import CardRow, NodeRow


def _cell(value: Any, unit: str = "") -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        value = f"{value:.0f}"
    return f"{value}{unit}"


def short_resource(name: str) -> str:
    """``tke.cloud.tencent.com/qgpu-core`` → ``qgpu-core``; ``nvidia.com/gpu`` → ``gpu``."""
    return name.rsplit("/", 1)[-1]


def logical_summary(logical: Any) -> str:
    """``qgpu-core 0/200, qgpu-memory 0/62``: requested/allocatable per GPU resource."""
    if not isinstance(logical, Mapping) or not logical:
        return "-"
    parts = []
    for resource, numbers in sorted(logical.items()):
        if isinstance(numbers, Mapping):
            req = _cell(numbers.get("requested"))
            alloc = _cell(numbers.get("allocatable", numbers.get("capacity")))
            parts.append(f"{short_resource(str(resource))} {req}/{alloc}")
    return ", ".join(parts) or "-"


def _gpu_line(gpu: CardRow) -> str:
    mem = f"{_cell(gpu.memory_used_mib)}/{_cell(gpu.memory_total_mib)}"
    return (
        f"  {_cell(gpu.index):<3} {_cell(gpu.utilization, '%'):>5} {mem:>13} "
        f"{_cell(gpu.temperature_c, 'C'):>5} {_cell(gpu.power_w, 'W'):>6}  {_cell(gpu.verdict)}"
    )


def node_table_lines(nodes: list[NodeRow]) -> list[str]:
    """One line per node (name, Ready, cordoned, SSH, requested/allocatable), then its cards."""
    width = max([len(n.node) for n in nodes] + [4])
    lines = [f"{'NODE':<{width}}  READY  CORDON  SSH      LOGICAL requested/allocatable"]
    for row in nodes:
        lines.append(
            f"{_cell(row.node):<{width}}  {_cell(row.ready):<5}  "
            f"{_cell(row.cordoned):<6}  {row.ssh[:8]:<8} {logical_summary(row.logical)}"
        )
        if row.gpus:
            lines.append("  GPU  UTIL      MEM(MiB)  TEMP  POWER  VERDICT")
            lines.extend(_gpu_line(g) for g in row.gpus)
    return lines
