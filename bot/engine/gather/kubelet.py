"""Kubelet liveness for node reads that could not ask systemd: from the Lease and Ready condition.

The node agent is an unprivileged container: it sees no host systemd, so its ``systemctl
is-active kubelet`` answers no state (not found, "not booted with systemd", no bus). For those
nodes the kubelet's Lease in kube-node-lease (``bot.kube.kubelet``) stands in, and the reading
says so in a note. A Lease that cannot be read leaves the state unknown: never a guess.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from bot.errors import GpubotError, NotFoundError
from bot.kube.kubelet import LEASE_NAMESPACE, SYSTEMD_STATES, kubelet_liveness
from bot.probes.kube import KubeReads
from bot.probes.observation import NodeObservation

#: Lease reads in flight at once
CONCURRENCY = 16


async def kubelet_from_leases(kube: KubeReads, nodes: Mapping[str, Any], results: Mapping[str, Any]) -> None:
    """Fill ``kubelet`` of every observation whose systemctl gave no state, from the node's Lease."""
    todo = [o for o in results.values() if isinstance(o, NodeObservation) and o.kubelet not in SYSTEMD_STATES]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(obs: NodeObservation) -> None:
        async with gate:
            try:
                lease = await kube.get_object("Lease", obs.node, LEASE_NAMESPACE)
            except NotFoundError:
                lease = None
            except GpubotError as exc:
                obs.notes.append(f"kubelet state unknown: systemctl gave none and the Lease could not be read "
                                 f"({exc.user_message})")
                obs.revise()
                return
        live = kubelet_liveness(lease, nodes.get(obs.node), datetime.now(UTC))
        obs.kubelet = live.state
        obs.kubelet_source = "lease"
        obs.notes.append(f"{live.evidence} (no host systemd to ask from here)")
        obs.revise()

    await asyncio.gather(*(one(o) for o in todo))
