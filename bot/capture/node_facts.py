"""A node's readings as a scenario ``nodes:`` section, so the simulator serves the same answers.

Input: the ``NodeObservation`` the bot's own probes made (or the ``NodeProbeError`` that stopped
them) and the raw answers the capture recorded. Output: the mapping ``bot.sim.scenario`` loads.
Pure; the inverse, as far as the format goes, of what ``bot/sim`` renders. What cannot be
represented is said in ``notes`` (a card nvidia-smi could not read at all keeps only its bus id
and error; nvidia-smi's own failure text is not replayed).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from bot.agent.kernel_log import JOURNAL_FILES, LOG_FILES
from bot.engine.gather.dcgm import SOURCE as DCGM_SOURCE
from bot.errors import NodeProbeError
from bot.probes.agent_reads import AGENT_KERNEL_LOG
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.probes.gpu_health import KERNEL_LOG, KERNEL_LOG_DMESG, EccReading
from bot.probes.node import NodeObservation
from bot.probes.nvidia_smi import GPU_FIELDS
from bot.probes.ssh import CommandResult

Obj = dict[str, Any]
CAT_CHECKPOINT = f"cat {CHECKPOINT_PATH}"

#: NodeProbeError reasons -> the ``ssh:`` fault that reproduces them
_SSH_MODES = {"refused": "unreachable", "timeout": "timeout", "auth": "auth-denied", "host-key": "wrong-host-key"}
#: agent failures -> the ``agent:`` mode that reproduces them
_AGENT_MODES = {"timeout": "hang", "auth": "forbidden"}
_AGENT_MISSING = (("Pending", "pending"), ("not Ready", "pending"), ("crash-looping", "crashloop"))
#: journalctl's short-iso line; the node agent's own journal read prints no host name
_JOURNAL = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2}T\S+)\s+(?:\S+\s+)?kernel:\s(?P<text>.*)$")
_DMESG = re.compile(r"^\[(?P<time>[^\]]+)\]\s?(?P<text>.*)$")
#: the numeric GPU fields nvidia-smi may print a bracketed marker for, by query name
_NUMERIC = dict(
    zip(
        GPU_FIELDS[3:],
        ("utilization_gpu", "memory_used_mib", "memory_total_mib", "temperature_c", "power_w"),
        strict=True,
    )
)


def iso_time(text: str) -> str:
    """A kernel-log or ls time as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC); the text itself if unreadable."""
    value = text.strip()
    for parse in (
        lambda v: datetime.fromisoformat(v.replace("Z", "+00:00")),
        lambda v: datetime.strptime(v, "%Y-%m-%dT%H:%M:%S%z"),
        lambda v: datetime.strptime(" ".join(v.split()), "%a %b %d %H:%M:%S %Y"),
    ):
        try:
            when = parse(value)
        except ValueError:
            continue
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def failed_node(error: NodeProbeError) -> Obj:
    """The section of a node that could not be read: the fault that gives the same answer.

    With nothing read there are no facts to serve, so the other transport is unreachable too.
    """
    if error.via == "agent":
        if error.reason == "agent-missing":
            mode = next((m for prefix, m in _AGENT_MISSING if error.detail.startswith(prefix)), "missing")
        elif "truncat" in error.detail or "before its exit status" in error.detail:
            mode = "truncated"
        else:
            mode = _AGENT_MODES.get(error.reason, "unreachable")
        return {"ssh": "unreachable", "agent": mode}
    return {"ssh": _SSH_MODES.get(error.reason, "unreachable"), "agent": "unreachable"}


def _bus_ids(obs: NodeObservation) -> dict[int, str]:
    return {t.index: f"{t.pci}.0" for t in obs.table if t.pci}


def _ecc_fields(reading: EccReading | None) -> Obj:
    if reading is None:
        return {}
    return {
        "ecc_volatile_uncorrected": reading.volatile_uncorrected,
        "ecc_aggregate_uncorrected": reading.aggregate_uncorrected,
        "retired_pages_pending": bool(reading.retired_pending),
        "remapped_rows_pending": bool(reading.remapped_pending),
        "remapping_failure": bool(reading.remap_failure),
    }


def _gpus(obs: NodeObservation, notes: list[str]) -> list[Obj]:
    buses = _bus_ids(obs)
    ecc = {r.pci: r for r in obs.ecc}
    out: list[Obj] = []
    for i, row in enumerate(obs.gpus):
        index = row.index if row.index is not None else i
        gpu: Obj = {"index": index, "uuid": row.uuid, "name": row.name or "NVIDIA GPU"}
        raw: dict[str, str] = {}
        for query, key in _NUMERIC.items():
            gpu[key] = getattr(row, key)
            text = row.raw.get(query, "").strip()
            if gpu[key] is None and text.startswith("[") and text not in ("[N/A]", "[GPU is lost]"):
                raw[query] = text
        if raw:
            gpu["raw"] = raw
        bus = buses.get(index)
        if bus:
            gpu["bus_id"] = bus
        if any(v.strip() == "[GPU is lost]" for v in row.raw.values()):
            gpu["lost"] = "GPU is lost"
        gpu.update(_ecc_fields(ecc.get(bus[:-2]) if bus else None))
        out.append(gpu)
    # cards nvidia-smi had no handle for: it then lists no card at all, so only these are known
    listed = {g.get("bus_id", "")[:-2] for g in out}
    for n, lost in enumerate(g for g in obs.lost_gpus if g.source == "nvidia-smi" and g.pci not in listed):
        out.append(
            {
                "index": lost.index if lost.index is not None else len(out) + n,
                "uuid": f"GPU-unknown-{lost.pci.replace(':', '-')}",
                "name": "unknown (no device handle)",
                "bus_id": f"{lost.pci}.0",
                "lost": lost.text.rsplit(": ", 1)[-1] or True,
            }
        )
        notes.append(f"card {lost.pci}: nvidia-smi had no handle for it; its uuid and name are placeholders")
    if obs.nvidia_smi_error and not obs.lost_gpus:
        notes.append(f"nvidia-smi failed ({obs.nvidia_smi_error}); the replay shows no cards instead")
    return out


#: kernel-log sources the simulator replays as another (its node facts know journal and dmesg);
#: dcgm-exporter's last Xid stood in for a kernel log that was not readable
_AS_REPLAYED = {JOURNAL_FILES: "journal", LOG_FILES: "journal", DCGM_SOURCE: "none"}


def _kernel_lines(obs: NodeObservation, raw: dict[str, CommandResult]) -> list[Obj]:
    """Kernel lines other than Xids (those are ``xid:``), from the answer the probe read."""
    command = {"dmesg": KERNEL_LOG_DMESG, JOURNAL_FILES: AGENT_KERNEL_LOG, LOG_FILES: AGENT_KERNEL_LOG}
    answer = raw.get(command.get(obs.kernel_log, KERNEL_LOG))
    if answer is None:
        return []
    out = []
    for line in answer.stdout.splitlines():
        match = _JOURNAL.match(line.strip()) or _DMESG.match(line.strip())
        if match is None or "NVRM: Xid" in match.group("text"):
            continue
        out.append({"time": iso_time(match.group("time")), "text": match.group("text")})
    return out


def node_section(obs: NodeObservation, raw: dict[str, CommandResult], notes: list[str]) -> Obj:
    """The ``nodes:`` entry that makes the simulator answer as this node did."""
    section: Obj = {
        "kubelet": obs.kubelet or "active",
        "driver": obs.driver_version,
        "cuda": obs.cuda_version,
        "driver_install": obs.driver_path,
        "gpus": _gpus(obs, notes),
        "processes": [
            {"pid": p.pid or 0, "name": p.process_name, "gpu_uuid": p.gpu_uuid, "used_memory_mib": p.used_memory_mib}
            for p in obs.processes
        ],
        "dev_nvidia": [{"name": d.name, "mtime": iso_time(d.mtime.isoformat())} for d in obs.dev_nvidia],
        # the replay answers the agent's own read of the host's log files as journalctl
        "kernel_log_source": _AS_REPLAYED.get(obs.kernel_log, obs.kernel_log or "none"),
    }
    cat = raw.get(CAT_CHECKPOINT)
    if cat is not None and cat.exit_status == 0:
        section["checkpoint"] = cat.stdout
    xids = [
        {
            "time": iso_time(x.time),
            "pci": x.pci,
            "xid": x.xid,
            "pid": x.pid or "<unknown>",
            "name": x.process,
            "text": x.text,
        }
        for x in obs.xids
    ]
    if xids:
        section["xid"] = xids
    lines = _kernel_lines(obs, raw)
    if lines:
        section["kernel_log"] = lines
    return section
