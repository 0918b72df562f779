"""dcgm-exporter's metrics as a physical-truth source: per card memory, load and last Xid, and
which pod holds it, where NVIDIA's exporter runs on the node.

dcgm-exporter (the GPU Operator's ``nvidia-dcgm-exporter`` DaemonSet, or its own Helm chart)
serves the Prometheus text format on port 9400: one sample per card and field, labelled ``gpu``
(the index), ``UUID``, ``device``, ``modelName``, ``Hostname``, and, where it maps cards to pods
through the kubelet's pod-resources API, ``pod``, ``namespace`` and ``container`` (empty for a
card no pod holds). It reads through DCGM, not through nvidia-smi, so it answers where the agent
has no nvidia-smi (GKE without a RuntimeClass) and it keeps the last Xid per card where the
kernel log is not readable.

``parse_metrics`` is pure (prometheus_client's parser does the text format); a value DCGM marks
blank (its int64 sentinels from 0x7ffffffffffffff0 up, e.g. 9223372036854775794 for a field the
card does not support) is None, never a number. ``fetch_metrics`` is the one HTTP GET, bounded.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from bot.probes.http_get import get_text

#: the fields read, by what they tell
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
XID = "DCGM_FI_DEV_XID_ERRORS"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER = "DCGM_FI_DEV_POWER_USAGE"
ECC_DBE_VOLATILE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
_FIELDS = (FB_USED, FB_FREE, GPU_UTIL, XID, GPU_TEMP, POWER, ECC_DBE_VOLATILE)
#: DCGM's blank values start here (DCGM_INT64_BLANK and the "not supported" / "not found" ones)
_BLANK = 0x7FFFFFFFFFFFFFF0
#: the labels dcgm-exporter puts on pods' cards, and the selectors of its usual installs
POD_LABELS = ("namespace", "pod", "container")
EXPORTER_SELECTORS = ("app=nvidia-dcgm-exporter", "app.kubernetes.io/name=dcgm-exporter")
DEFAULT_PORT = 9400
#: the most of one answer read (a node's full field set is tens of KB)
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class PodOnCard:
    """A container dcgm-exporter says holds the card."""

    namespace: str
    pod: str
    container: str


@dataclass
class DcgmCard:
    """One card's fields (None = not exported, or blank); MIG instances are not cards here."""

    index: int | None
    uuid: str
    model: str = ""
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    utilization_gpu: float | None = None
    last_xid: int | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    ecc_dbe_volatile: float | None = None
    pods: list[PodOnCard] = field(default_factory=list)


@dataclass
class DcgmReading:
    """A node's dcgm-exporter answer, by card uuid, in the order the exporter listed them."""

    cards: dict[str, DcgmCard] = field(default_factory=dict)
    #: the exporter's Hostname label (its pod or node name), as evidence
    hostname: str = ""
    problems: list[str] = field(default_factory=list)


def _value(raw: float) -> float | None:
    if math.isnan(raw) or math.isinf(raw) or raw >= _BLANK:
        return None
    return raw


def _index(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse_metrics(text: str) -> DcgmReading:
    """The cards of a dcgm-exporter ``/metrics`` answer; other metrics are ignored, MIG
    instances (``GPU_I_ID``) are skipped, a text that is not the format is one problem."""
    from prometheus_client.parser import text_string_to_metric_families  # only where an exporter answered

    reading = DcgmReading()
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        reading.problems.append(f"dcgm-exporter's answer is not the Prometheus text format: {exc}"[:300])
        return reading
    for family in families:
        for sample in family.samples:
            if sample.name not in _FIELDS or sample.labels.get("GPU_I_ID"):
                continue
            labels = sample.labels
            uuid = labels.get("UUID", "") or f"gpu-{labels.get('gpu', '?')}"
            card = reading.cards.setdefault(uuid, DcgmCard(_index(labels.get("gpu", "")), uuid))
            card.model = card.model or labels.get("modelName", "")
            reading.hostname = reading.hostname or labels.get("Hostname", "")
            holder = PodOnCard(*(labels.get(k, "") for k in POD_LABELS))
            if holder.pod and holder not in card.pods:
                card.pods.append(holder)
            value = _value(sample.value)
            if sample.name == FB_USED:
                card.fb_used_mib = value
            elif sample.name == FB_FREE:
                card.fb_free_mib = value
            elif sample.name == GPU_UTIL:
                card.utilization_gpu = value
            elif sample.name == XID:
                card.last_xid = None if value is None else int(value)
            elif sample.name == GPU_TEMP:
                card.temperature_c = value
            elif sample.name == POWER:
                card.power_w = value
            else:
                card.ecc_dbe_volatile = value
    return reading


async def fetch_metrics(host: str, port: int, *, timeout: float) -> str:
    """GET ``http://host:port/metrics`` (the exporter's pod IP) within ``timeout`` seconds;
    ``OSError`` / ``http_get.HttpError`` / ``TimeoutError`` for the caller to word."""
    async with asyncio.timeout(timeout):
        return await get_text(host, port, "/metrics", limit=MAX_BYTES)
