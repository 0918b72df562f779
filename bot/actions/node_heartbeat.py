"""Has the kubelet spoken since we restarted it? The node's heartbeats, read from the API.

A node's Ready condition stays True for the node-monitor grace period (about 40 s) after its
kubelet stops, so "Ready" right after a restart proves nothing. The kubelet renews its node
Lease (``kube-node-lease/<node>``, ``spec.renewTime``) every few seconds and stamps the Ready
condition's ``lastHeartbeatTime``; a value newer than the one read just before the restart is
the proof the restarted kubelet is posting. Comparing two readings of the cluster's own clock
also keeps the bot's clock out of it.

Reads only (the Lease through the official client in a thread); never writes the Lease.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.actions.base import ActionContext

LEASE_NAMESPACE = "kube-node-lease"


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Heartbeat:
    """The node's last heartbeats as the API shows them (empty when not there)."""

    #: the node Lease's ``spec.renewTime``
    lease: str = ""
    #: the Ready condition's ``lastHeartbeatTime``
    ready: str = ""

    def newer_than(self, before: Heartbeat) -> bool | None:
        """True if the kubelet posted since ``before``; None when there is nothing to compare."""
        for now_text, then_text in ((self.lease, before.lease), (self.ready, before.ready)):
            now, then = _time(now_text), _time(then_text)
            if now is not None and then is not None:
                return now > then
        return None

    def describe(self) -> str:
        return f"lease renewed {self.lease}" if self.lease else f"Ready heartbeat {self.ready or 'unknown'}"

    def to_dict(self) -> dict[str, str]:
        return {"lease": self.lease, "ready": self.ready}

    @classmethod
    def from_dict(cls, data: Any) -> Heartbeat:
        data = data if isinstance(data, dict) else {}
        return cls(str(data.get("lease") or ""), str(data.get("ready") or ""))


def ready_heartbeat(node_obj: dict[str, Any]) -> str:
    for cond in (node_obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return str(cond.get("lastHeartbeatTime") or "")
    return ""


async def read_heartbeat(ctx: ActionContext, node: str, node_obj: dict[str, Any]) -> Heartbeat:
    """The Lease's renew time and ``node_obj``'s Ready heartbeat; a Lease that cannot be read
    (an old cluster, RBAC without leases) leaves only the Ready heartbeat to compare."""
    api = client.CoordinationV1Api(ctx.api)

    def read() -> str:
        try:
            resp: Any = api.read_namespaced_lease(
                node, LEASE_NAMESPACE, _preload_content=False, _request_timeout=ctx.settings.api_timeout_s
            )
            body = json.loads(resp.data or b"{}")
        except (ApiException, OSError, ValueError):
            return ""
        except Exception:  # noqa: BLE001 - urllib3 errors: a missing lease must not fail the step
            return ""
        return str(((body.get("spec") or {}) if isinstance(body, dict) else {}).get("renewTime") or "")

    return Heartbeat(await asyncio.to_thread(read), ready_heartbeat(node_obj))
