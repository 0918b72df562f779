"""Parse the kubelet device-plugin checkpoint (``kubelet_internal_checkpoint``).

The file is how the kubelet remembers which pod holds which device; entries for pods that no
longer exist are the "zombie allocation" the field notes describe. Two formats exist
(``REFERENCE.md``): the current one keys ``DeviceIDs`` by NUMA node (a device may be listed under
several nodes), v1 (Kubernetes <= 1.19) has a plain list. This module only reads text: it never
rewrites the file (its checksum cannot be recomputed outside Go) and raises ``CheckpointError``,
never anything else, on text it cannot read.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Literal

CHECKPOINT_PATH = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


class CheckpointError(ValueError):
    """The checkpoint text is not a checkpoint the bot can read; the message says why."""


@dataclass
class CheckpointEntry:
    """One container's device allocation."""

    pod_uid: str
    container: str
    resource: str
    #: de-duplicated, in the order first listed
    device_ids: list[str]
    #: environment from ``AllocResp`` (e.g. NVIDIA_VISIBLE_DEVICES), when it could be decoded
    alloc_env: dict[str, str] = field(default_factory=dict)


@dataclass
class Checkpoint:
    """The kubelet checkpoint as parsed: its allocations and the devices the plugin registered, in
    either format, so zombie allocations are found by comparing plain sets."""

    entries: list[CheckpointEntry]
    #: resource name -> device ids the plugin registered
    registered: dict[str, list[str]]
    format: Literal["v2", "v1"]
    boot_id: str | None = None
    checksum: int | None = None

    def pod_uids(self) -> set[str]:
        return {e.pod_uid for e in self.entries}


def _dedupe(ids: list[Any], where: str) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in ids:
        if not isinstance(item, str):
            raise CheckpointError(f"{where}: device id {item!r} is not a string")
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _device_ids(raw: Any, where: str) -> tuple[list[str], bool]:
    """The ids and whether this entry is in the v1 (plain list) format."""
    if raw is None:
        return [], False
    if isinstance(raw, list):
        return _dedupe(raw, where), True
    if isinstance(raw, dict):
        ids: list[Any] = []
        for numa, listed in raw.items():
            if listed is None:
                continue
            if not isinstance(listed, list):
                raise CheckpointError(f"{where}[{numa!r}]: expected a list of device ids")
            ids.extend(listed)
        return _dedupe(ids, where), False
    raise CheckpointError(f"{where}: expected a NUMA map or a list, got {type(raw).__name__}")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes) -> list[tuple[int, bytes]]:
    """Length-delimited fields of one protobuf message; other wire types are skipped."""
    out = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ValueError("truncated field")
            out.append((key >> 3, buf[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError("unsupported wire type")
    return out


def decode_alloc_env(alloc_resp: Any) -> dict[str, str]:
    """The ``envs`` map of a base64 ``ContainerAllocateResponse``; empty when undecodable.

    Best effort on purpose: the allocation response is evidence (which card the container was
    given), not something a diagnosis may depend on.
    """
    if not isinstance(alloc_resp, str) or not alloc_resp:
        return {}
    try:
        buf = base64.b64decode(alloc_resp, validate=True)
        env: dict[str, str] = {}
        for number, body in _fields(buf):
            if number != 1:  # field 1 = envs (map<string, string>)
                continue
            pair = dict(_fields(body))
            env[pair.get(1, b"").decode()] = pair.get(2, b"").decode()
        return env
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return {}


def _entry(raw: Any, where: str) -> tuple[CheckpointEntry, bool]:
    if not isinstance(raw, dict):
        raise CheckpointError(f"{where}: expected an object")
    values = {}
    for key in ("PodUID", "ContainerName", "ResourceName"):
        value = raw.get(key)
        if not isinstance(value, str):
            raise CheckpointError(f"{where}.{key}: missing or not a string")
        values[key] = value
    ids, v1 = _device_ids(raw.get("DeviceIDs"), f"{where}.DeviceIDs")
    entry = CheckpointEntry(
        pod_uid=values["PodUID"],
        container=values["ContainerName"],
        resource=values["ResourceName"],
        device_ids=ids,
        alloc_env=decode_alloc_env(raw.get("AllocResp")),
    )
    return entry, v1


def parse_checkpoint(text: str) -> Checkpoint:
    """Read checkpoint text; raise CheckpointError with a message saying what is wrong."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CheckpointError(f"checkpoint is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CheckpointError("checkpoint is not a JSON object")
    body = data.get("Data")
    if not isinstance(body, dict):
        raise CheckpointError("checkpoint has no Data object")
    raw_entries = body.get("PodDeviceEntries")
    if raw_entries is None:
        raw_entries = []
    if not isinstance(raw_entries, list):
        raise CheckpointError("Data.PodDeviceEntries: expected a list or null")
    entries = []
    any_v1 = False
    for i, raw in enumerate(raw_entries):
        entry, v1 = _entry(raw, f"Data.PodDeviceEntries[{i}]")
        entries.append(entry)
        any_v1 = any_v1 or v1
    raw_registered = body.get("RegisteredDevices")
    if raw_registered is None:
        raw_registered = {}
    if not isinstance(raw_registered, dict):
        raise CheckpointError("Data.RegisteredDevices: expected an object")
    registered = {}
    for resource, ids in raw_registered.items():
        if ids is None:
            ids = []
        if not isinstance(ids, list):
            raise CheckpointError(f"Data.RegisteredDevices[{resource!r}]: expected a list")
        registered[str(resource)] = _dedupe(ids, f"Data.RegisteredDevices[{resource!r}]")
    boot_id = data.get("BootID")
    checksum = data.get("Checksum")
    return Checkpoint(
        entries=entries,
        registered=registered,
        format="v1" if any_v1 else "v2",
        boot_id=boot_id if isinstance(boot_id, str) and boot_id else None,
        checksum=checksum if isinstance(checksum, int) and not isinstance(checksum, bool) else None,
    )
