"""What a node's kubelet does to the simulated API: its Lease, its Ready heartbeat, going stale.

On a real cluster the kubelet renews its node Lease (``coordination.k8s.io/v1``, namespace
``kube-node-lease``, named after the node) every few seconds and posts the Ready condition with
a ``lastHeartbeatTime``. When it stops, nothing changes at once: the node controller marks Ready
``Unknown`` only after the node-monitor grace period (40 s by default). So "Ready is True" right
after a kubelet restart proves nothing; a heartbeat newer than the restart does.

The SSH simulator tells ``NodeLifecycle`` when a node's kubelet starts or stops; this module then
renews the Lease and Ready (after ``heartbeat_delay_s``, a kubelet that takes its time to come
up) or, ``grace_s`` after a stop, sets Ready to Unknown. Both knobs are 0 by default (the
kubelet posts at once, a stop is noticed at once); fault tests raise them. It writes the store
directly, as the kubelet and the node controller would; it never serves HTTP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bot.sim.store import ObjectStore, ResourceType, resource_for

LEASE_NAMESPACE = "kube-node-lease"
LEASE_API_VERSION = "coordination.k8s.io/v1"
#: what a kubelet asks for (``nodeLeaseDurationSeconds``)
LEASE_DURATION_S = 40


def micro_time(at: datetime | None = None) -> str:
    """A Kubernetes MicroTime: ``2026-11-30T10:00:00.123456Z``."""
    return (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_lease(node: str, renew_time: str) -> dict[str, Any]:
    return {
        "apiVersion": LEASE_API_VERSION,
        "kind": "Lease",
        "metadata": {"name": node, "namespace": LEASE_NAMESPACE},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": LEASE_DURATION_S, "renewTime": renew_time},
    }


def leases_for(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A fresh Lease for every Node in ``objects`` that has none there (pasted clusters may)."""
    objects = list(objects)
    have = {
        str((o.get("metadata") or {}).get("name"))
        for o in objects
        if o.get("kind") == "Lease" and (o.get("metadata") or {}).get("namespace") == LEASE_NAMESPACE
    }
    now = micro_time()
    return [
        node_lease(name, now)
        for o in objects
        if o.get("kind") == "Node" and (name := str((o.get("metadata") or {}).get("name") or "")) not in have
    ]


def _rtype(api_version: str, kind: str) -> ResourceType:
    found = resource_for(api_version, kind)
    assert found is not None, kind
    return found


class NodeLifecycle:
    """The kubelets' and the node controller's writes for every node of one simulated API."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        #: seconds Ready stays True after a kubelet stops (a real cluster: about 40)
        self.grace_s = 0.0
        #: node -> seconds from a kubelet start to its first heartbeat (a slow kubelet)
        self.heartbeat_delay_s: dict[str, float] = {}
        #: (time.time(), node) of every heartbeat posted, in order, for tests to compare with writes
        self.heartbeats: list[tuple[float, str]] = []
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._lease = _rtype(LEASE_API_VERSION, "Lease")
        self._node = _rtype("v1", "Node")

    def kubelet_changed(self, node: str, state: str) -> None:
        """The node's kubelet is now ``state`` (``active`` after a start, else stopped/failed)."""
        timer = self._timers.pop(node, None)
        if timer is not None:
            timer.cancel()
        if state == "active":
            self._later(node, self.heartbeat_delay_s.get(node, 0.0), self.heartbeat)
        else:
            self._later(node, self.grace_s, self.stale)

    def _later(self, node: str, delay: float, what: Any) -> None:
        if delay <= 0:
            what(node)
            return
        self._timers[node] = asyncio.get_running_loop().call_later(delay, what, node)

    def heartbeat(self, node: str) -> None:
        """Renew the node's Lease and post Ready=True with a fresh ``lastHeartbeatTime`` (a test may
        call it to let a slow kubelet post now)."""
        timer = self._timers.pop(node, None)
        if timer is not None:
            timer.cancel()
        now = micro_time()
        entry = self.store.get(self._lease, LEASE_NAMESPACE, node)
        lease = dict(entry.obj) if entry is not None else node_lease(node, now)
        lease["spec"] = {**(lease.get("spec") or {}), "renewTime": now}
        self.store.put(self._lease, lease)
        self._set_ready(node, "True", "KubeletReady", "kubelet is posting ready status", now)
        self.heartbeats.append((time.time(), node))

    def stale(self, node: str) -> None:
        """The node controller's verdict once the grace period passed without a heartbeat."""
        self._timers.pop(node, None)
        self._set_ready(node, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", None)

    def _set_ready(self, node: str, status: str, reason: str, message: str, heartbeat: str | None) -> None:
        entry = self.store.get(self._node, "", node)
        if entry is None:
            return
        obj = dict(entry.obj)
        node_status = dict(obj.get("status") or {})
        conditions = [dict(c) for c in node_status.get("conditions") or [] if isinstance(c, dict)]
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None:
            ready = {"type": "Ready"}
            conditions.append(ready)
        now = micro_time()
        if ready.get("status") != status:
            ready["lastTransitionTime"] = now[:19] + "Z"
        ready.update(status=status, reason=reason, message=message)
        if heartbeat is not None:
            ready["lastHeartbeatTime"] = heartbeat[:19] + "Z"
        node_status["conditions"] = conditions
        obj["status"] = node_status
        self.store.put(self._node, obj)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
