"""node-status: the devices DRA drivers publish per node, beside the device-plugin resources.

From Kubernetes 1.34 GPUs are increasingly handed out through Dynamic Resource Allocation: the
driver's kubelet plugin publishes each node's devices in ResourceSlices, and ResourceClaims hold
them; none of it shows in the node's capacity/allocatable. One info finding lists, per node and
driver, the devices published and how many are allocated, so node-status shows both worlds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.facts import Facts


class NodeDraDevices(TypedDict):
    count: str
    nodes: str
    driver: str


NODE_DRA_DEVICES = Code("NODE_DRA_DEVICES", NodeDraDevices)


def _allocated(claims: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(pool, driver) -> devices allocated to claims (a node's pool is named after the node)."""
    out: dict[tuple[str, str], int] = {}
    for c in claims:
        allocation = (c.get("status") or {}).get("allocation") or {}
        for r in ((allocation.get("devices") or {}).get("results")) or []:
            key = (str(r.get("pool") or ""), str(r.get("driver") or ""))
            out[key] = out.get(key, 0) + 1
    return out


def run(facts: Facts) -> Iterator[Detection]:
    """NODE_DRA_DEVICES when any driver publishes devices; nothing on a cluster without DRA."""
    dra = facts.dra_inventory
    if not dra.version or not dra.slices:
        return
    published: dict[tuple[str, str, str], int] = {}
    for s in dra.slices:
        spec = s.get("spec") or {}
        pool = str((spec.get("pool") or {}).get("name") or "")
        where = str(spec.get("nodeName") or pool or "?")
        key = (where, str(spec.get("driver") or "?"), pool)
        published[key] = published.get(key, 0) + len(spec.get("devices") or [])
    held = _allocated(dra.all_claims)
    rows = [
        f"{node}: {driver} publishes {n} device(s), {held.get((pool, driver), 0)} allocated"
        for (node, driver, pool), n in sorted(published.items())
    ]
    nodes = sorted({node for node, _, _ in published})
    drivers = sorted({driver for _, driver, _ in published})
    yield NODE_DRA_DEVICES.detect(
        "cluster",
        {
            "count": str(sum(published.values())),
            "nodes": ", ".join(nodes[:8]),
            "driver": ", ".join(drivers),
        },
        evidence=rows[:40],
    )


CHECK = Check(name="node.dra_devices", reads=("dra_inventory",), emits=(NODE_DRA_DEVICES,), run=run)
