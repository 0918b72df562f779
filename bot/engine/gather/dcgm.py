"""dcgm-exporter beside the node reads: each read node's exporter pod, asked for its metrics.

Where NVIDIA's dcgm-exporter runs on a node (the GPU Operator's ``nvidia-dcgm-exporter``, or its own
chart), its ``/metrics`` is a second physical source, read through DCGM rather than nvidia-smi:
per card memory and load, the pod holding it, and the last Xid. The bot GETs it from the
exporter pod's IP and port (``bot.probes.dcgm``; the pods come from the GPU-stack components it
already listed), bounded by the node deadline, and adds it to the node's reading: a note per node,
and, where the kernel log could not be read, the last Xid of each card as that card's Xid event
(its PCI address from nvidia-smi's table), so ``GPU_UNHEALTHY`` does not rest on a log it could
not read. An exporter that does not answer is a note; nothing is concluded from it, and one that
let a read time out is not asked again for ``SILENT_FOR_S`` (where traffic to it is dropped, every
report would wait on it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from bot.engine.facts import GpuComponents
from bot.kube.objects import Obj, labels_of, meta_of
from bot.probes.dcgm import DEFAULT_PORT, DcgmCard, DcgmReading, fetch_metrics, parse_metrics
from bot.probes.gpu_health import XidEvent
from bot.probes.http_get import HttpError
from bot.probes.observation import NodeObservation

#: the labels of the exporter's pods: the GPU Operator's, and dcgm-exporter's own chart's
EXPORTER_LABELS = (("app", "nvidia-dcgm-exporter"), ("app.kubernetes.io/name", "dcgm-exporter"))
#: exporter reads in flight at once
CONCURRENCY = 16
#: seconds an exporter that let a read time out is not asked again: where the bot's traffic to it
#: is dropped, every report would otherwise wait the whole timeout on it
SILENT_FOR_S = 600.0
#: (pod IP, port) -> ``time.monotonic()`` until which it is not asked
_SILENT: dict[tuple[str, int], float] = {}
#: the source name a reading's ``kernel_log`` gets when dcgm-exporter's last Xid stands in for it
SOURCE = "dcgm-exporter"


def exporter_on(pods: list[Obj]) -> tuple[str, str, int] | None:
    """(namespace/name, pod IP, metrics port) of the running exporter among ``pods``; None."""
    for pod in pods:
        labels = labels_of(pod)
        status = pod.get("status") or {}
        if not any(labels.get(k) == v for k, v in EXPORTER_LABELS) or status.get("phase") != "Running":
            continue
        ip = str(status.get("podIP") or "")
        if not ip:
            continue
        ports = [p for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []]
        port = next((p.get("containerPort") for p in ports if p.get("name") == "metrics"), None)
        port = port or next((p.get("containerPort") for p in ports if p.get("containerPort") == DEFAULT_PORT), None)
        meta = meta_of(pod)
        return f"{meta.get('namespace')}/{meta.get('name')}", ip, int(port or DEFAULT_PORT)
    return None


def _card_text(card: DcgmCard) -> str:
    parts = []
    if card.fb_used_mib is not None:
        parts.append(f"{card.fb_used_mib:g} MiB used")
    if card.utilization_gpu is not None:
        parts.append(f"{card.utilization_gpu:g}% busy")
    if card.pods:
        parts.append("held by " + ", ".join(f"{p.namespace}/{p.pod}" for p in card.pods))
    if card.last_xid:
        parts.append(f"last Xid {card.last_xid}")
    return f"GPU {card.index if card.index is not None else '?'}: " + (", ".join(parts) or "no fields")


def apply(obs: NodeObservation, reading: DcgmReading, pod: str) -> None:
    """Add the exporter's answer to the node's reading (see the module docstring)."""
    obs.revise()
    obs.dcgm = reading
    for problem in reading.problems:
        obs.notes.append(f"dcgm-exporter {pod}: {problem}")
    if not reading.cards:
        return
    cards = "; ".join(_card_text(c) for c in reading.cards.values())
    obs.notes.append(f"dcgm-exporter {pod}: {cards}")
    if obs.kernel_log:
        return
    pci_of = {card.index: card.pci for card in obs.table}
    for card in reading.cards.values():
        if not card.last_xid:
            continue
        pci = pci_of.get(card.index, "") if card.index is not None else ""
        if not pci:
            obs.notes.append(f"dcgm-exporter: last Xid {card.last_xid} on GPU {card.index}, whose PCI address "
                             "nvidia-smi did not give")
            continue
        text = "the last Xid dcgm-exporter reports for this card (the kernel log was not readable)"
        raw = f"DCGM_FI_DEV_XID_ERRORS{{gpu=\"{card.index}\",UUID=\"{card.uuid}\"}} {card.last_xid}"
        obs.xids.append(XidEvent(pci, card.last_xid, "", "", "", text, raw))
    obs.kernel_log = SOURCE
    obs.notes.append("Xid events from dcgm-exporter's last-Xid field (DCGM_FI_DEV_XID_ERRORS), since the exporter "
                     "started; the kernel log itself was not readable")


async def dcgm_for_readings(components: GpuComponents, results: Mapping[str, Any], *, timeout: float) -> None:
    """Ask each read node's exporter (if one runs there) and add its answer to the reading."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(obs: NodeObservation, pod: str, ip: str, port: int) -> None:
        if _SILENT.get((ip, port), 0.0) > time.monotonic():
            obs.notes.append(f"dcgm-exporter {pod} not asked: it did not answer at {ip}:{port} within the "
                             f"timeout on an earlier read (asked again {SILENT_FOR_S / 60:g} minutes after that)")
            obs.revise()
            return
        async with gate:
            try:
                text = await fetch_metrics(ip, port, timeout=timeout)
            except (OSError, HttpError, TimeoutError) as exc:
                if isinstance(exc, TimeoutError):
                    _SILENT[(ip, port)] = time.monotonic() + SILENT_FOR_S
                why = f"no answer within {timeout:g}s" if isinstance(exc, TimeoutError) else (
                    str(exc) or type(exc).__name__)
                obs.notes.append(f"dcgm-exporter {pod} not readable at {ip}:{port}: {why}"[:300])
                obs.revise()
                return
            _SILENT.pop((ip, port), None)
        apply(obs, parse_metrics(text), pod)

    todo = []
    for obs in results.values():
        # a reading kept from an earlier question (the node memo) has its exporter's answer already
        if isinstance(obs, NodeObservation) and obs.dcgm is None:
            found = exporter_on(components.pods_on(obs.node))
            if found is not None:
                todo.append(one(obs, *found))
    await asyncio.gather(*todo)
