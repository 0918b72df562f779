"""The pending-action store on the Kubernetes API: one ``GpuRemediation`` object per offer.

For several replicas: every state change is a compare-and-swap on the object's
``resourceVersion`` (a PUT of its status subresource carrying the version it read), so when
fifty clicks reach two replicas at once, exactly one PUT moves ``pending`` → ``running`` and the
others get 409 Conflict, read again and see it taken. Expiry is ``creationTimestamp + ttl``
against the API server's clock (``KubeState``), never a replica's. "One running action per node"
is a coordination.k8s.io Lease per node (``kube_locks``), taken only by a record that is
already ``running``; the claim gives the record back (``pending``) when the node is busy.

``spec`` is the offer (immutable but for where its message is); ``status`` is the state machine.
Finished records are deleted after ``retention`` by ``expire_overdue`` (the sweep): the audit
trail, not this store, is the history. ``kubectl get gpuremediations -n NS`` lists them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from bot.errors import NotFoundError, StateStoreError
from bot.state.kube import (
    API_VERSION,
    REMEDIATIONS,
    Conflict,
    KubeState,
    action_id_of,
    created_at,
    object_name,
)
from bot.state.kube_locks import NodeLocks
from bot.state.records import FINISH_STATES, STATES, ClaimResult, ClaimStatus, PendingAction, plain_json
from bot.state.timestamps import format_ts, parse_ts

#: finished records are kept this long for ``kubectl get`` and the views, then deleted
DEFAULT_RETENTION = timedelta(days=7)
#: compare-and-swap retries before a write is reported as failed (others kept winning)
_CAS_TRIES = 20


def _time(text: Any) -> datetime | None:
    return parse_ts(str(text)) if text else None


def to_action(obj: Mapping[str, Any]) -> PendingAction:
    """The record a ``GpuRemediation`` object holds; its expiry is creation + ttl (server times)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    created = created_at(obj)
    return PendingAction(
        id=action_id_of(obj["metadata"]["name"]),
        action=spec["action"],
        params=dict(spec.get("params") or {}),
        cluster=spec["cluster"],
        requested_by=spec["requestedBy"],
        created_at=created,
        expires_at=created + timedelta(seconds=float(spec["ttlSeconds"])),
        channel=spec.get("channel") or "",
        message_ts=spec.get("messageTs"),
        thread_ts=spec.get("threadTs"),
        state=status.get("state") or "pending",
        approved_by=status.get("approvedBy"),
        finished_at=_time(status.get("finishedAt")),
        result_summary=status.get("resultSummary"),
        finding_code=spec.get("findingCode"),
        owner=status.get("owner") or None,
        heartbeat_at=_time(status.get("heartbeatAt")),
        progress=dict(status.get("progress") or {}),
        version=str(obj["metadata"].get("resourceVersion", "")),
        message_blocks=str(spec.get("messageBlocks") or ""),
    )


def to_object(action: PendingAction) -> dict[str, Any]:
    ttl = (action.expires_at - action.created_at).total_seconds()
    spec: dict[str, Any] = {
        "action": action.action,
        "params": dict(action.params),
        "cluster": action.cluster,
        "target": action.target,
        "requestedBy": action.requested_by,
        "ttlSeconds": max(0, round(ttl)),
        "channel": action.channel,
    }
    for key, value in (
        ("findingCode", action.finding_code),
        ("messageTs", action.message_ts),
        ("threadTs", action.thread_ts),
    ):
        if value is not None:
            spec[key] = value
    return {
        "apiVersion": API_VERSION,
        "kind": "GpuRemediation",
        "metadata": {"name": object_name(action.id), "labels": {"app.kubernetes.io/managed-by": "gpubot"}},
        "spec": spec,
        "status": {"state": "pending"},
    }


Edit = Callable[[dict[str, Any], datetime], dict[str, Any] | None]


class KubePendingStore:
    """``PendingStore`` on ``GpuRemediation`` objects; safe from any number of threads and replicas."""

    def __init__(self, state: KubeState, *, retention: timedelta = DEFAULT_RETENTION) -> None:
        self.state = state
        self.locks = NodeLocks(state)
        self.retention = retention

    def now(self) -> datetime:
        return self.state.now()

    def create(self, action: PendingAction) -> PendingAction:
        if action.state != "pending":
            raise ValueError("a new pending action must be in state 'pending'")
        try:
            obj = self.state.create(REMEDIATIONS, to_object(action))
        except Conflict:
            raise ValueError(f"pending action id {action.id[:8]}… already exists") from None
        if not obj.get("status"):
            # a real API server drops status on create when the status subresource is on
            obj = self.state.replace_status(REMEDIATIONS, {**obj, "status": {"state": "pending"}})
        return to_action(obj)

    def _read(self, action_id: str) -> dict[str, Any] | None:
        try:
            return self.state.get(REMEDIATIONS, object_name(action_id))
        except NotFoundError:
            return None

    def get(self, action_id: str) -> PendingAction | None:
        obj = self._read(action_id)
        return to_action(obj) if obj is not None else None

    def _swap(self, action_id: str, edit: Edit) -> tuple[dict[str, Any] | None, bool]:
        """Read, ``edit`` the status against the server's time, write back at the version read.

        ``edit`` returns the new status, or None to leave the object as it is. Returns the object
        after the call and whether this call's write won; a 409 means another writer came first,
        so it reads again and lets ``edit`` decide anew.
        """
        for _ in range(_CAS_TRIES):
            obj = self._read(action_id)
            if obj is None:
                return None, False
            status = edit(dict(obj.get("status") or {}), self.state.server_time())
            if status is None:
                return obj, False
            try:
                return self.state.replace_status(REMEDIATIONS, {**obj, "status": status}), True
            except Conflict:
                continue
            except NotFoundError:
                return None, False
        raise StateStoreError("the pending action kept changing under this write; try again")

    def claim(self, action_id: str, *, approver: str, owner: str = "") -> ClaimResult:
        verdict: dict[str, ClaimStatus] = {}

        def to_running(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
            verdict.clear()
            if (status.get("state") or "pending") != "pending":
                verdict["status"] = "already_taken"
                return None
            if now >= expires_at:
                verdict["status"] = "expired"
                return {**status, **_expired(now)}
            verdict["status"] = "claimed"
            return {
                "state": "running",
                "approvedBy": approver,
                "owner": owner or None,
                "heartbeatAt": format_ts(now) if owner else None,
                "progress": {},
            }

        first = self._read(action_id)
        if first is None:
            return ClaimResult("unknown")
        expires_at = to_action(first).expires_at
        obj, _won = self._swap(action_id, to_running)
        if obj is None:
            return ClaimResult("unknown")
        record = to_action(obj)
        if verdict.get("status") != "claimed":
            return ClaimResult(verdict.get("status", "already_taken"), record, record.state)
        if record.lock_key:
            holder = self.locks.acquire(record.lock_key, object_name(record.id), self._running_holder)
            if holder is not None:
                back = self._give_back(record.id)
                return ClaimResult("busy", back or record, "pending", holder=holder)
        return ClaimResult("claimed", record, record.state)

    def _running_holder(self, holder_name: str) -> PendingAction | None:
        """The record that holds a node lock, if it is still running (else the lock is stale)."""
        record = self.get(action_id_of(holder_name))
        return record if record is not None and record.state == "running" else None

    def _give_back(self, action_id: str) -> PendingAction | None:
        """Our claim on a busy node is undone: the record is pending again, for a later click."""

        def to_pending(status: dict[str, Any], _now: datetime) -> dict[str, Any] | None:
            return {"state": "pending"} if status.get("state") == "running" else None

        obj, _won = self._swap(action_id, to_pending)
        return to_action(obj) if obj is not None else None

    def heartbeat(self, action_id: str, owner: str) -> bool:
        def renew(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
            if status.get("state") != "running" or status.get("owner") != owner:
                return None
            return {**status, "heartbeatAt": format_ts(now)}

        _obj, won = self._swap(action_id, renew)
        return won

    def save_progress(self, action_id: str, owner: str, progress: Mapping[str, Any]) -> None:
        plain = plain_json(progress)

        def write(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
            if status.get("state") != "running" or (status.get("owner") or "") != (owner or ""):
                return None
            return {**status, "progress": plain, "heartbeatAt": format_ts(now)}

        _obj, won = self._swap(action_id, write)
        if not won:
            raise StateStoreError("the action is no longer running under this process; stopping")

    def finish(self, action_id: str, state: str, summary: str) -> PendingAction | None:
        if state not in FINISH_STATES:
            raise ValueError(f"finish: {state!r} is not one of {sorted(FINISH_STATES)}")

        def end(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
            if status.get("state") != "running":
                return None
            return {**status, "state": state, "resultSummary": summary, "finishedAt": format_ts(now)}

        obj, won = self._swap(action_id, end)
        if not won or obj is None:
            return None
        record = to_action(obj)
        if record.lock_key:
            self.locks.release(record.lock_key, object_name(record.id))
        return record

    def set_message(self, action_id: str, *, channel: str, message_ts: str, thread_ts: str | None = None) -> None:
        def where(spec: dict[str, Any]) -> dict[str, Any]:
            spec = {**spec, "channel": channel, "messageTs": message_ts}
            if thread_ts is not None:
                spec["threadTs"] = thread_ts
            else:
                spec.pop("threadTs", None)
            return spec

        self._edit_spec(action_id, where)

    def set_blocks(self, action_id: str, blocks: str) -> None:
        self._edit_spec(action_id, lambda spec: {**spec, "messageBlocks": blocks})

    def _edit_spec(self, action_id: str, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Where the offer is shown (the spec's only mutable part), written at the version read."""
        for _ in range(_CAS_TRIES):
            obj = self._read(action_id)
            if obj is None:
                return
            spec = edit(dict(obj["spec"]))
            try:
                self.state.replace(REMEDIATIONS, {**obj, "spec": spec})
                return
            except Conflict:
                continue
        raise StateStoreError("the pending action kept changing under this write; try again")

    def expire_overdue(self) -> builtins.list[PendingAction]:
        objs = self.state.list_all(REMEDIATIONS)
        now = self.state.server_time()
        expired: builtins.list[PendingAction] = []
        for obj in objs:
            record = to_action(obj)
            if record.state == "pending" and record.is_expired(now):
                after, won = self._swap(record.id, _expire_if_pending)
                if won and after is not None:
                    expired.append(to_action(after))
            elif record.finished_at is not None and record.finished_at + self.retention < now:
                self.state.delete(REMEDIATIONS, obj["metadata"]["name"], record.version)
        return expired

    def take_over_stale(
        self, owner: str, *, lease_s: float, skip: Collection[str] = ()
    ) -> builtins.list[PendingAction]:
        objs = self.state.list_all(REMEDIATIONS)
        taken: builtins.list[PendingAction] = []
        for record in sorted((to_action(o) for o in objs), key=lambda r: r.created_at):
            if record.state != "running" or record.id in skip:
                continue

            def take(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
                beat = _time(status.get("heartbeatAt"))
                stale = not status.get("owner") or beat is None or beat < now - timedelta(seconds=lease_s)
                if status.get("state") != "running" or not stale:
                    return None
                return {**status, "owner": owner, "heartbeatAt": format_ts(now)}

            after, won = self._swap(record.id, take)
            if won and after is not None:
                taken.append(to_action(after))
        return taken

    def list(self, *, states: Iterable[str] | None = None, limit: int = 100) -> builtins.list[PendingAction]:
        wanted: set[str] | None = None
        if states is not None:
            wanted = set(states)
            unknown = wanted - STATES
            if unknown:
                raise ValueError(f"unknown states {sorted(unknown)}")
        records = [to_action(o) for o in self.state.list_all(REMEDIATIONS)]
        chosen = [r for r in records if wanted is None or r.state in wanted]
        chosen.sort(key=lambda r: (r.created_at, int(r.version or 0)), reverse=True)
        return chosen[: max(0, limit)]


def _expired(now: datetime) -> dict[str, Any]:
    return {
        "state": "expired",
        "finishedAt": format_ts(now),
        "resultSummary": "expired before anyone approved it",
    }


def _expire_if_pending(status: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    # judged again at the write: a click may have claimed it since the list was read
    return {**status, **_expired(now)} if (status.get("state") or "pending") == "pending" else None
