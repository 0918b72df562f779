"""One running action per node on the Kubernetes API: a coordination.k8s.io Lease per node.

The Lease ``gpubot-node-<hash of the lock key>`` names the ``GpuRemediation`` that holds the
node in ``holderIdentity``. Only a record that is already ``running`` takes the lock, and a
record leaves ``running`` only by finishing; so a lock whose holder is not running any more is
stale (its release was lost) and may be taken over. Every take is a compare-and-swap on the
Lease's ``resourceVersion`` (create: 409 AlreadyExists), so two claims on one node cannot both
win. The Lease carries no duration: it is held until the holder finishes, however long that is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes.client import V1Lease, V1LeaseSpec, V1ObjectMeta

from bot.coordination.kube_state import Conflict, KubeState, NotFound, hashed_name
from bot.errors import StateStoreError
from bot.remediation.store import PendingAction

_TRIES = 20
#: the running record holding a lock, or None when it is not running any more
HolderCheck = Callable[[str], PendingAction | None]


class NodeLocks:
    """Acquire and release the per-node Leases of one namespace."""

    def __init__(self, state: KubeState) -> None:
        self.state = state

    def _name(self, lock_key: str) -> str:
        return hashed_name("gpubot-node", lock_key)

    def _read(self, name: str) -> Any | None:
        try:
            return self.state.call(
                self.state.coordination.read_namespaced_lease_with_http_info, name, self.state.namespace
            )
        except NotFound:
            return None

    def acquire(self, lock_key: str, holder: str, running: HolderCheck) -> PendingAction | None:
        """Take the node for ``holder``; None when taken, else the running record that holds it."""
        name = self._name(lock_key)
        for _ in range(_TRIES):
            lease = self._read(name)
            if lease is None:
                body = V1Lease(
                    metadata=V1ObjectMeta(
                        name=name,
                        labels={"app.kubernetes.io/managed-by": "gpubot", "gpubot.dev/lock": "node"},
                    ),
                    spec=V1LeaseSpec(holder_identity=holder),
                )
                try:
                    self.state.call(
                        self.state.coordination.create_namespaced_lease_with_http_info, self.state.namespace, body
                    )
                    return None
                except Conflict:
                    continue
            current = lease.spec.holder_identity if lease.spec is not None else None
            if current == holder:
                return None
            if current:
                other = running(current)
                if other is not None:
                    return other
            lease.spec = lease.spec or V1LeaseSpec()
            lease.spec.holder_identity = holder
            try:
                self.state.call(
                    self.state.coordination.replace_namespaced_lease_with_http_info,
                    name,
                    self.state.namespace,
                    lease,
                )
                return None
            except (Conflict, NotFound):
                continue
        raise StateStoreError("the node's lock kept changing hands; try again")

    def release(self, lock_key: str, holder: str) -> None:
        """Free the node if ``holder`` still holds it; a lost release only leaves a stale lock."""
        name = self._name(lock_key)
        try:
            lease = self._read(name)
            if lease is None or lease.spec is None or lease.spec.holder_identity != holder:
                return
            self.state.call(
                self.state.coordination.delete_namespaced_lease_with_http_info,
                name,
                self.state.namespace,
                body={"preconditions": {"resourceVersion": lease.metadata.resource_version}},
            )
        except (Conflict, NotFound, StateStoreError):
            return
