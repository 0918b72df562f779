"""Per-node locks on the Kubernetes API, as coordination.k8s.io Leases.

Two locks live here. ``NodeLocks`` is the state store's (``state: kubernetes``): the Lease
``gpubot-node-<hash of the lock key>`` names the ``GpuRemediation`` that holds the node in
``holderIdentity``. Only a record that is already ``running`` takes it, and a record leaves
``running`` only by finishing; so a lock whose holder is not running any more is stale (its
release was lost) and may be taken over. It carries no duration.

``ClusterNodeGuard`` is the lock every actor sees, whatever its state backend (a terminal with its
own state file, a bot on SQLite, replicas on the API): the Lease ``gpubot-action-<node>`` in
``settings.namespace`` of the node's own cluster, taken before a node action starts, with a
duration (``action_lease_s``) renewed while the run lasts. It carries the run's record and,
written before every step, what the run has changed, so the next process that touches the node
after its holder died restores the node from the Lease alone and records the ids it restored.

Every take is a compare-and-swap on the Lease's ``resourceVersion`` (create: 409
AlreadyExists), so two claims on one node cannot both win; expiry is judged by the API server's
clock.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from kubernetes.client import ApiClient, V1Lease, V1LeaseSpec, V1ObjectMeta

from bot.errors import NotFoundError, StateStoreError
from bot.settings import Settings
from bot.state.kube import Conflict, KubeState, hashed_name
from bot.state.lease_blocks import pack, unpack
from bot.state.records import Adoption, NodeClaim, PendingAction, plain_json
from bot.state.timestamps import format_ts, parse_ts

_TRIES = 20
log = logging.getLogger(__name__)
#: the running record holding a lock, or None when it is not running any more
HolderCheck = Callable[[str], PendingAction | None]


def read_lease(state: KubeState, name: str) -> Any | None:
    """The Lease ``name`` in the state's namespace, or None when there is none (every Lease gpubot
    holds: the node locks here, the leader's in ``leadership``)."""
    try:
        return state.call(state.coordination.read_namespaced_lease_with_http_info, name, state.namespace)
    except NotFoundError:
        return None


def create_lease(state: KubeState, body: V1Lease) -> bool:
    """Create the Lease ``body``; False when it exists already (another holder came first)."""
    try:
        state.call(state.coordination.create_namespaced_lease_with_http_info, state.namespace, body)
        return True
    except Conflict:
        return False


class NodeLocks:
    """Acquire and release the per-node Leases of one namespace."""

    def __init__(self, state: KubeState) -> None:
        self.state = state

    def _name(self, lock_key: str) -> str:
        return hashed_name("gpubot-node", lock_key)

    def _read(self, name: str) -> Any | None:
        return read_lease(self.state, name)

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
                if create_lease(self.state, body):
                    return None
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
            except (Conflict, NotFoundError):
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
        except (Conflict, NotFoundError, StateStoreError):
            return


# -- the node's action lock on the cluster, for every actor (ClusterNodeGuard) ------------------------

#: the Lease of node N is ``gpubot-action-N`` (hashed when N is too long for a name)
ACTION_LEASE_PREFIX = "gpubot-action"
#: the run holding the node: its record (id, action, params, who approved it, where it came from)
RUN_KEY = "gpubot.dev/run"
#: what the run has changed so far, written before each step (``NodeRun.progress``)
PROGRESS_KEY = "gpubot.dev/progress"
#: the blocks of the Slack message showing the run's status line (``lease_blocks``), kept when the
#: run is announced, so whoever restores the run edits that line even without the run's own state
BLOCKS_KEY = "gpubot.dev/message-blocks"
#: the ids of abandoned runs restored through this Lease (newest last), so their own state's
#: recovery knows the node is no longer theirs to touch
RESTORED_KEY = "gpubot.dev/restored"
_KEEP_RESTORED = 20
_MAX_NAME = 253


def action_lease_name(node: str) -> str:
    """The node's action Lease: readable (``kubectl get lease gpubot-action-<node>``) where it fits."""
    name = f"{ACTION_LEASE_PREFIX}-{node}"
    return name if len(name) <= _MAX_NAME else hashed_name(ACTION_LEASE_PREFIX, node)


def run_annotation(record: PendingAction) -> str:
    """The record as the Lease carries it: enough to audit and restore it from any process."""
    return json.dumps(
        {
            "id": record.id,
            "action": record.action,
            "params": dict(record.params),
            "cluster": record.cluster,
            "requested_by": record.requested_by,
            "approved_by": record.approved_by or "",
            "created_at": format_ts(record.created_at),
            "expires_at": format_ts(record.expires_at),
            "finding_code": record.finding_code or "",
            "channel": record.channel,
            "message_ts": record.message_ts or "",
            "thread_ts": record.thread_ts or "",
        },
        sort_keys=True,
    )


def run_of(annotations: Mapping[str, str] | None, owner: str | None) -> PendingAction | None:
    """The run a Lease names, with its progress; None when it names none (or one that cannot be read)."""
    ann = annotations or {}
    try:
        data = json.loads(ann.get(RUN_KEY) or "null")
        progress = json.loads(ann.get(PROGRESS_KEY) or "{}")
        if not isinstance(data, dict) or not isinstance(progress, dict):
            return None
        return PendingAction(
            id=str(data["id"]),
            action=str(data["action"]),
            params={str(k): str(v) for k, v in dict(data.get("params") or {}).items()},
            cluster=str(data.get("cluster") or ""),
            requested_by=str(data.get("requested_by") or ""),
            created_at=parse_ts(str(data["created_at"])),
            expires_at=parse_ts(str(data["expires_at"])),
            channel=str(data.get("channel") or ""),
            message_ts=str(data.get("message_ts") or "") or None,
            thread_ts=str(data.get("thread_ts") or "") or None,
            state="running",
            approved_by=str(data.get("approved_by") or "") or None,
            finding_code=str(data.get("finding_code") or "") or None,
            owner=owner,
            progress=progress,
            message_blocks=unpack(ann.get(BLOCKS_KEY)),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _restored(annotations: Mapping[str, str] | None) -> list[str]:
    try:
        ids = json.loads((annotations or {}).get(RESTORED_KEY) or "[]")
    except ValueError:
        return []
    return [str(i) for i in ids] if isinstance(ids, list) else []


class NodeActionLeases:
    """The action Leases of one cluster's namespace; blocking calls through the official client.

    Every take, renewal and release is a compare-and-swap on the Lease's ``resourceVersion``;
    expiry is ``renewTime + leaseDurationSeconds`` against the API server's clock (``KubeState``).
    """

    def __init__(self, state: KubeState, lease_s: float) -> None:
        self.state = state
        self.lease_s = lease_s

    def _read(self, node: str) -> Any | None:
        return read_lease(self.state, action_lease_name(node))

    def _spec(self, holder: str, now: datetime, old: V1LeaseSpec | None) -> V1LeaseSpec:
        same = old is not None and old.holder_identity == holder
        transitions = (old.lease_transitions or 0) if old is not None else 0
        return V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=max(1, math.ceil(self.lease_s)),
            acquire_time=(old.acquire_time if same and old is not None else None) or now,
            renew_time=now,
            lease_transitions=transitions if same else transitions + (1 if old is not None else 0),
        )

    @staticmethod
    def _left_s(spec: V1LeaseSpec | None, now: datetime) -> float:
        """Seconds the Lease is still held for; 0 when free or run out."""
        if spec is None or not spec.holder_identity or spec.renew_time is None:
            return 0.0
        ends = spec.renew_time + timedelta(seconds=spec.lease_duration_seconds or 0)
        return max(0.0, (ends - now).total_seconds())

    def _write(self, node: str, lease: Any | None, spec: V1LeaseSpec, annotations: dict[str, str]) -> bool:
        """Create or replace (at the version read); False when another writer came first."""
        if lease is None:
            body = V1Lease(
                metadata=V1ObjectMeta(
                    name=action_lease_name(node),
                    labels={"app.kubernetes.io/managed-by": "gpubot", "gpubot.dev/lock": "node-action"},
                    annotations=annotations,
                ),
                spec=spec,
            )
            try:
                return create_lease(self.state, body)
            except NotFoundError:
                raise StateStoreError(
                    f"node actions take a Lease per node in namespace {self.state.namespace} (setting namespace), "
                    "and it does not exist on this cluster"
                ) from None
        lease.metadata.annotations = annotations
        lease.spec = spec
        try:
            self.state.call(
                self.state.coordination.replace_namespaced_lease_with_http_info,
                action_lease_name(node),
                self.state.namespace,
                lease,
            )
            return True
        except (Conflict, NotFoundError):
            return False

    def _view(self, node: str) -> tuple[Any | None, datetime, V1LeaseSpec | None, dict[str, str]]:
        """The Lease as read (None: none), the server's time of that read, its spec and annotations."""
        lease = self._read(node)
        spec = lease.spec if lease is not None else None
        ann = dict((lease.metadata.annotations if lease is not None else None) or {})
        return lease, self.state.server_time(), spec, ann

    def acquire(self, node: str, record: PendingAction, holder: str) -> NodeClaim:
        for _ in range(_TRIES):
            lease, now, spec, ann = self._view(node)
            current = spec.holder_identity if spec is not None else None
            run = run_of(ann, current)
            left = self._left_s(spec, now)
            if current and current != holder and left > 0:
                return NodeClaim("busy", run, left)
            if current and current != holder and run is not None:
                # its holder stopped renewing mid-run: take the Lease as it is, to restore that run
                if self._write(node, lease, self._spec(holder, now, spec), ann):
                    return NodeClaim("abandoned", run)
                continue
            ann.pop(PROGRESS_KEY, None)
            ann.pop(BLOCKS_KEY, None)
            ann[RUN_KEY] = run_annotation(record)
            if self._write(node, lease, self._spec(holder, now, spec), ann):
                return NodeClaim("acquired")
        raise StateStoreError(f"the action lock of node {node} kept changing hands; try again")

    def adopt(self, node: str, record: PendingAction, holder: str) -> Adoption:
        for _ in range(_TRIES):
            lease, now, spec, ann = self._view(node)
            if record.id in _restored(ann):
                return "elsewhere"
            current = spec.holder_identity if spec is not None else None
            run = run_of(ann, current)
            if run is not None and run.id == record.id:
                if current and self._left_s(spec, now) > 0:
                    return "live"
            elif current:
                # another run took the node after this one: it restored this one first
                return "elsewhere"
            else:
                # free and naming no run: this run ended but its result was never written, or
                # it ran before the node had a Lease; restore from the record
                ann[RUN_KEY] = run_annotation(record)
                ann[PROGRESS_KEY] = json.dumps(plain_json(record.progress), sort_keys=True)
            if self._write(node, lease, self._spec(holder, now, spec), ann):
                return "ours"
        raise StateStoreError(f"the action lock of node {node} kept changing hands; try again")

    def renew(self, node: str, holder: str, progress: Mapping[str, Any] | None = None) -> None:
        for _ in range(_TRIES):
            lease = self._read(node)
            spec = lease.spec if lease is not None else None
            if lease is None or spec is None or spec.holder_identity != holder:
                raise StateStoreError(f"the action lock of node {node} is no longer this run's; stopping")
            ann = dict(lease.metadata.annotations or {})
            if progress is not None:
                ann[PROGRESS_KEY] = json.dumps(plain_json(progress), sort_keys=True)
            if self._write(node, lease, self._spec(holder, self.state.server_time(), spec), ann):
                return
        raise StateStoreError(f"the action lock of node {node} kept changing under this run; stopping")

    def keep_blocks(self, node: str, record: PendingAction, blocks_json: str) -> None:
        """Keep the blocks of ``record``'s message (and where it is: channel, ts, thread, when
        ``record`` says) on its node's Lease, while the Lease still names that run; too large, or
        the run not there any more: nothing is written."""
        packed = pack(blocks_json)
        if packed is None:
            log.info("message of %s too large to keep on the node's Lease; a restore notes it in the thread", record.id)
            return
        for _ in range(_TRIES):
            lease, _now, spec, ann = self._view(node)
            run = run_of(ann, spec.holder_identity if spec is not None else None)
            if lease is None or spec is None or not spec.holder_identity or run is None or run.id != record.id:
                return
            where = replace(
                run,
                channel=record.channel or run.channel,
                message_ts=record.message_ts or run.message_ts,
                thread_ts=record.thread_ts or run.thread_ts,
            )
            ann[RUN_KEY] = run_annotation(where)
            ann[BLOCKS_KEY] = packed
            if self._write(node, lease, spec, ann):
                return
        raise StateStoreError(f"the action lock of node {node} kept changing; its message was not kept on it")

    def abandoned(self) -> list[PendingAction]:
        """The runs of this namespace whose Lease has run out while it still names them."""
        found = self.state.call(
            self.state.coordination.list_namespaced_lease_with_http_info,
            self.state.namespace,
            label_selector="gpubot.dev/lock=node-action",
        )
        now = self.state.server_time()
        out = []
        for lease in found.items or []:
            spec = lease.spec
            if spec is None or not spec.holder_identity or self._left_s(spec, now) > 0:
                continue
            run = run_of(lease.metadata.annotations, spec.holder_identity)
            if run is not None and run.params.get("node"):
                out.append(run)
        return out

    def held(self, node: str) -> PendingAction | None:
        """The run holding ``node`` now, or None when its Lease is free or has run out."""
        lease = self._read(node)
        if lease is None or self._left_s(lease.spec, self.state.server_time()) <= 0:
            return None
        return run_of(lease.metadata.annotations, lease.spec.holder_identity)

    def release(self, node: str, holder: str, *, restored: str = "") -> None:
        for _ in range(3):
            try:
                lease = self._read(node)
            except StateStoreError:
                return
            spec = lease.spec if lease is not None else None
            if lease is None or spec is None or spec.holder_identity != holder:
                return
            ann = dict(lease.metadata.annotations or {})
            for key in (RUN_KEY, PROGRESS_KEY, BLOCKS_KEY):
                ann.pop(key, None)
            if restored:
                ann[RESTORED_KEY] = json.dumps([*_restored(ann), restored][-_KEEP_RESTORED:])
            spec.holder_identity = None
            spec.lease_duration_seconds = 1
            try:
                if self._write(node, lease, spec, ann):
                    return
            except StateStoreError:
                return


class ApiClients(Protocol):
    """The caller's per-cluster API connections (``bot.probes.clients.KubeClients``)."""

    def api_client_for(self, cluster_name: str) -> ApiClient: ...


class ClusterNodeGuard:
    """``NodeGuard`` on the node's own cluster, in ``settings.namespace``: the lock every actor sees."""

    def __init__(self, settings: Settings, clients: ApiClients) -> None:
        self.settings = settings
        self.clients = clients
        self._leases: dict[str, NodeActionLeases] = {}

    def leases(self, cluster: str) -> NodeActionLeases:
        name = self.settings.cluster(cluster or None).name
        if name not in self._leases:
            state = KubeState(
                self.clients.api_client_for(name), self.settings.namespace, timeout_s=self.settings.api_timeout_s
            )
            self._leases[name] = NodeActionLeases(state, self.settings.action_lease_s)
        return self._leases[name]

    def acquire(self, record: PendingAction, holder: str) -> NodeClaim:
        return self.leases(record.cluster).acquire(_node(record), record, holder)

    def adopt(self, record: PendingAction, holder: str) -> Adoption:
        return self.leases(record.cluster).adopt(_node(record), record, holder)

    def renewed(self, record: PendingAction) -> bool:
        run = self.held(record.cluster, _node(record))
        return run is not None and run.id == record.id

    def renew(self, record: PendingAction, holder: str, progress: Mapping[str, Any] | None = None) -> None:
        self.leases(record.cluster).renew(_node(record), holder, progress)

    def release(self, record: PendingAction, holder: str, *, restored: str = "") -> None:
        self.leases(record.cluster).release(_node(record), holder, restored=restored)

    def keep_blocks(self, record: PendingAction, blocks_json: str) -> None:
        """Keep ``record``'s message blocks on its node's Lease (``NodeActionLeases.keep_blocks``)."""
        self.leases(record.cluster).keep_blocks(_node(record), record, blocks_json)

    def held(self, cluster: str, node: str) -> PendingAction | None:
        """The run acting on ``node`` now (its Lease held and renewed), or None: for the watch."""
        return self.leases(cluster).held(node)

    def abandoned(self) -> list[PendingAction]:
        out: list[PendingAction] = []
        for cluster in self.settings.clusters:
            try:
                out += self.leases(cluster.name).abandoned()
            except StateStoreError as exc:  # no namespace, no right to list: the next touch restores it
                log.debug("node locks of cluster %s not listed: %s", cluster.name, exc.user_message)
            except Exception:  # noqa: BLE001 - a scan that cannot run must not stop the sweep's other work
                log.warning("node locks of cluster %s not listed", cluster.name, exc_info=True)
        return out


def _node(record: PendingAction) -> str:
    return record.params.get("node", "")
