"""DRA objects read together: what a claim asks, which driver's devices can serve it, who holds them.

Pure functions over resource.k8s.io objects (v1, v1beta2 and v1beta1 field names): a claim's
requests (``exactly`` in v1, flat in v1beta1), a DeviceClass's CEL selectors (only the
``device.driver == "..."`` term is read: it names whose ResourceSlices can serve the class), the
devices each driver publishes per node, and the devices allocated to claims. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ClaimRequest:
    name: str
    device_class: str
    count: int


def claim_requests(claim: Obj) -> list[ClaimRequest]:
    out = []
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        body = req.get("exactly") or req  # v1 nests the request under ``exactly``
        first = (req.get("firstAvailable") or [{}])[0]
        body = body if body.get("deviceClassName") else first
        count = int(body.get("count") or 1) if body.get("allocationMode", "ExactCount") == "ExactCount" else 0
        out.append(ClaimRequest(str(req.get("name") or "?"), str(body.get("deviceClassName") or ""), count))
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
            meta = c.get("metadata") or {}
            out[f"{meta.get('namespace')}/{meta.get('name')}"] = n
    return out


def is_allocated(claim: Obj) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))
