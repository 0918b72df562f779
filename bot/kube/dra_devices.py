"""DRA objects read together: what a claim asks, which driver's devices can serve it, who holds them.

Pure functions over resource.k8s.io objects (v1, v1beta2 and v1beta1 field names): a claim's
requests (``exactly`` in v1, flat in v1beta1) with their own selectors, a DeviceClass's CEL
selectors (the ``device.driver == "..."`` term names whose ResourceSlices can serve the class;
``bot.kube.dra_cel`` evaluates the whole selector against each published device), the devices
each driver publishes per node, and the devices allocated to claims. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.dra_cel import Unsupported, matches
from bot.kube.objects import meta_of

Obj = Mapping[str, Any]
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ClaimRequest:
    """One request of a ResourceClaim: how many devices of which DeviceClass, and its own selectors,
    so the published devices it could get can be counted against it."""

    name: str
    device_class: str
    count: int
    #: the request's own CEL selectors (ANDed with its DeviceClass's)
    selectors: tuple[str, ...] = ()


def _cel(selectors: Any) -> tuple[str, ...]:
    return tuple(str((s.get("cel") or {}).get("expression") or "") for s in selectors or [] if isinstance(s, Mapping))


def claim_requests(claim: Obj) -> list[ClaimRequest]:
    out = []
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        body = req.get("exactly") or req  # v1 nests the request under ``exactly``
        first = (req.get("firstAvailable") or [{}])[0]
        body = body if body.get("deviceClassName") else first
        count = int(body.get("count") or 1) if body.get("allocationMode", "ExactCount") == "ExactCount" else 0
        out.append(ClaimRequest(str(req.get("name") or "?"), str(body.get("deviceClassName") or ""), count,
                                _cel(body.get("selectors"))))
    return out


def class_drivers(device_class: Obj) -> set[str]:
    """Drivers a DeviceClass's CEL selectors pin (empty: any driver, or not recognised)."""
    found: set[str] = set()
    for sel in (device_class.get("spec") or {}).get("selectors") or []:
        found.update(_DRIVER.findall(str((sel.get("cel") or {}).get("expression") or "")))
    return found


def class_selectors(device_class: Obj) -> list[str]:
    selectors = (device_class.get("spec") or {}).get("selectors") or []
    return [str((s.get("cel") or {}).get("expression") or "") for s in selectors]


def devices_by_node(slices: Iterable[Obj], driver: str) -> dict[str, int]:
    """node (or pool) -> devices ``driver`` publishes there."""
    out: dict[str, int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("driver") != driver:
            continue
        where = str(spec.get("nodeName") or (spec.get("pool") or {}).get("name") or "?")
        out[where] = out.get(where, 0) + len(spec.get("devices") or [])
    return out


def allocated_by(claims: Iterable[Obj], driver: str) -> dict[str, int]:
    """claim (namespace/name) -> devices of ``driver`` allocated to it."""
    out: dict[str, int] = {}
    for c in claims:
        results = ((((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or []
        n = sum(1 for r in results if r.get("driver") == driver)
        if n:
            meta = meta_of(c)
            out[f"{meta.get('namespace')}/{meta.get('name')}"] = n
    return out


def is_allocated(claim: Obj) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


#: (driver, pool, device): how an allocation result names one device
DeviceKey = tuple[str, str, str]


@dataclass
class Selection:
    """Which published devices a request's selectors pick."""

    #: node (or pool) -> the matching devices' keys
    by_node: dict[str, list[DeviceKey]]
    #: (selector, why) for each selector gpubot could not evaluate: then nothing is concluded
    unevaluated: list[tuple[str, str]]
    #: selector -> how many of the driver's devices it lets through by itself
    passing: dict[str, int]
    #: one line per kind of device seen (its productName and memory), for the evidence
    seen: list[str]

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.by_node.values())


def _describe(device: Obj) -> str:
    attrs, cap = device.get("attributes") or {}, device.get("capacity") or {}
    parts = []
    for key, entry in sorted(attrs.items()):
        if str(key).rpartition("/")[2] in ("productName", "type", "architecture") and isinstance(entry, Mapping):
            parts.append(f"{key}={next(iter(entry.values()), '?')}")
    for key, entry in sorted(cap.items()):
        if isinstance(entry, Mapping) and "value" in entry:
            parts.append(f"capacity {key}={entry['value']}")
    return ", ".join(parts) or "no attributes"


def select(slices: Iterable[Obj], drivers: set[str], selectors: Iterable[str]) -> Selection:
    """The devices of ``drivers`` (any driver when empty) that every selector picks."""
    exprs = [e for e in selectors if e]
    out = Selection({}, [], {e: 0 for e in exprs}, [])
    bad: dict[str, str] = {}
    for s in slices:
        spec = s.get("spec") or {}
        driver = str(spec.get("driver") or "")
        if drivers and driver not in drivers:
            continue
        where = str(spec.get("nodeName") or (spec.get("pool") or {}).get("name") or "?")
        pool = str((spec.get("pool") or {}).get("name") or "")
        out.by_node.setdefault(where, [])
        for device in spec.get("devices") or []:
            if not isinstance(device, Mapping):
                continue
            seen = _describe(device.get("basic") or device)  # v1beta1 nests the fields under ``basic``
            if seen not in out.seen:
                out.seen.append(seen)
            ok = True
            for e in exprs:
                if e in bad:
                    continue
                try:
                    passed = matches(e, device.get("basic") or device, driver)
                except Unsupported as err:
                    bad[e] = str(err) or "unsupported"
                    continue
                out.passing[e] += int(passed)
                ok = ok and passed
            if ok:
                out.by_node[where].append((driver, pool, str(device.get("name") or "")))
    out.unevaluated = sorted(bad.items())
    return out


def allocated_devices(claims: Iterable[Obj]) -> dict[DeviceKey, str]:
    """Every allocated device -> the claim (namespace/name) that holds it."""
    out: dict[DeviceKey, str] = {}
    for c in claims:
        results = ((((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or []
        meta = meta_of(c)
        for r in results:
            key = (str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))
            out[key] = f"{meta.get('namespace')}/{meta.get('name')}"
    return out


def reserving_pods(claim: Obj) -> list[tuple[str, str]]:
    """(name, uid) of the pods a claim's ``status.reservedFor`` names (other consumers skipped)."""
    out = []
    for ref in (claim.get("status") or {}).get("reservedFor") or []:
        if isinstance(ref, Mapping) and ref.get("resource") == "pods" and not ref.get("apiGroup"):
            out.append((str(ref.get("name") or ""), str(ref.get("uid") or "")))
    return out
