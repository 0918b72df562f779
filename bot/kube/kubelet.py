"""Is a node's kubelet alive, as the API sees it: its Lease in kube-node-lease and the Ready condition.

Where the node read cannot ask the host's systemd (the unprivileged node agent sees no host
systemd bus, and distributions such as Bottlerocket or COS give it none to see), the kubelet's own
heartbeat is the evidence: it renews its Lease every ~10 s (``leaseDurationSeconds``, 40 by
default) and the node controller turns Ready Unknown when it stops. A fresh Lease with Ready True is
a running kubelet. A stale Lease is a kubelet that stopped heartbeating, or a node the API cannot
hear: not the same as "inactive", so nothing here ever answers with a systemd state word.
Plain dicts in, an answer out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

Obj = dict[str, Any]

#: the words ``systemctl is-active`` answers with; anything else is not an answer from systemd
SYSTEMD_STATES = frozenset(
    {"active", "inactive", "failed", "activating", "deactivating", "reloading", "refreshing", "maintenance"}
)
LEASE_NAMESPACE = "kube-node-lease"
#: the kubelet's default ``nodeLeaseDurationSeconds``, when a Lease does not say
DEFAULT_LEASE_S = 40


@dataclass(frozen=True)
class KubeletLiveness:
    """``state`` for the node row (``active`` or ``not heartbeating``, never a systemd word for a
    stopped unit), and the evidence line it rests on."""

    state: str
    evidence: str


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


def _ready(node: Obj | None) -> str:
    for cond in ((node or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status", "Unknown"))
    return "Unknown"


def kubelet_liveness(lease: Obj | None, node: Obj | None, now: datetime) -> KubeletLiveness:
    """The kubelet's liveness from its Lease (None: the node has none) and the Node's Ready."""
    ready = _ready(node)
    spec = (lease or {}).get("spec") or {}
    renewed = _parse(str(spec.get("renewTime") or ""))
    duration = int(spec.get("leaseDurationSeconds") or DEFAULT_LEASE_S)
    if renewed is None:
        return KubeletLiveness("not heartbeating", f"no kubelet Lease renewal in {LEASE_NAMESPACE}; Ready {ready}")
    age = max(0.0, (now - renewed).total_seconds())
    where = f"Lease {LEASE_NAMESPACE}/{(lease or {}).get('metadata', {}).get('name', '?')} renewed {age:.0f}s ago"
    if age <= duration and ready == "True":
        return KubeletLiveness("active", f"kubelet heartbeating: {where}, Ready True")
    return KubeletLiveness("not heartbeating", f"kubelet not heartbeating: {where} (lease {duration}s), Ready {ready}")
