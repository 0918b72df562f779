"""The audit trail on the Kubernetes API: one ``GpuAuditRecord`` object per entry, never changed.

Append-only by construction twice over: this module only creates and reads (no update, patch or
delete call exists here), and the chart's Role grants gpubot ``create``, ``get``, ``list`` and
``watch`` on the records and nothing else, so even a bug cannot rewrite history. Every entry is
also written as one JSON log line (``gpubot.audit``), for log shipping. An entry's time is the
API server's (``KubeState``); its ``id`` is the resourceVersion the server gave it, which grows.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.errors import StateStoreError
from bot.observability import log_event
from bot.state.audit_log import AppendOnlyLog
from bot.state.ids import is_well_formed
from bot.state.kube import API_VERSION, AUDIT_RECORDS, Conflict, KubeState, object_name
from bot.state.records import AuditEntry, utc
from bot.state.timestamps import format_ts, parse_ts

log = logging.getLogger("gpubot.audit")
_ACTION_LABEL = "gpubot.dev/action"
#: random bytes after a record name's whole-second time: 48 bits, so records of one busy second
#: (fifty clicks' refusals) practically never share a name; ``NAME_ATTEMPTS`` covers the rest
NAME_SUFFIX_BYTES = 6
NAME_ATTEMPTS = 5


def _entry(obj: Mapping[str, Any]) -> AuditEntry:
    spec = obj.get("spec") or {}
    rv = str(obj["metadata"].get("resourceVersion", "0"))
    return AuditEntry(
        id=int(rv) if rv.isdigit() else 0,
        ts=parse_ts(spec["ts"]),
        event=spec["event"],
        action_id=spec.get("actionId", ""),
        action=spec.get("action", ""),
        actor=spec.get("actor", ""),
        cluster=spec.get("cluster", ""),
        target=spec.get("target", ""),
        detail=dict(spec.get("detail") or {}),
        outcome=spec.get("outcome", ""),
    )


class KubeAuditLog(AppendOnlyLog):
    """``AuditLog`` on ``GpuAuditRecord`` objects: create and list only."""

    def __init__(self, state: KubeState) -> None:
        self.state = state

    def now(self) -> datetime:
        return self.state.server_time()

    def write(self, entry: AuditEntry) -> AuditEntry:
        labels = {"app.kubernetes.io/managed-by": "gpubot", "gpubot.dev/event": entry.event}
        if is_well_formed(entry.action_id):
            labels[_ACTION_LABEL] = object_name(entry.action_id)[:63]
        spec = {
            "ts": format_ts(entry.ts),
            "event": entry.event,
            "actionId": entry.action_id,
            "action": entry.action,
            "actor": entry.actor,
            "cluster": entry.cluster,
            "target": entry.target,
            "detail": dict(entry.detail),
            "outcome": entry.outcome,
        }
        stored = _entry(self._create(entry.ts, labels, spec))
        log_event(log, "audit", **{k: v for k, v in stored.to_dict().items() if k != "id"})
        return stored

    def _create(self, when: datetime, labels: Mapping[str, str], spec: Mapping[str, Any]) -> dict[str, Any]:
        """Create the record under a time-ordered name (``kubectl get gpuauditrecords`` lists them in
        order). The server's clock has whole seconds, so every record of one second shares the
        prefix and only the random suffix tells them apart: a taken name (409) is another record's,
        and the create is tried again under a new suffix rather than losing this one."""
        prefix = when.strftime("%Y%m%d-%H%M%S-%f-")
        for _ in range(NAME_ATTEMPTS):
            name = prefix + secrets.token_hex(NAME_SUFFIX_BYTES)
            body = {"apiVersion": API_VERSION, "kind": "GpuAuditRecord", "metadata": {"name": name, "labels": labels}}
            try:
                obj: dict[str, Any] = self.state.create(AUDIT_RECORDS, {**body, "spec": dict(spec)})
                return obj
            except Conflict:
                continue
        raise StateStoreError(f"no free audit record name after {NAME_ATTEMPTS} tries; not written")

    def query(
        self, since: datetime | None = None, limit: int = 1000, *, action_id: str | None = None
    ) -> list[AuditEntry]:
        selector = ""
        if action_id is not None and is_well_formed(action_id):
            selector = f"{_ACTION_LABEL}={object_name(action_id)[:63]}"
        entries = [_entry(o) for o in self.state.list_all(AUDIT_RECORDS, label_selector=selector)]
        if since is not None:
            start = utc(since)
            entries = [e for e in entries if e.ts >= start]
        if action_id is not None:
            entries = [e for e in entries if e.action_id == action_id]
        entries.sort(key=lambda e: (e.id, e.ts))
        return entries[-limit:] if limit > 0 else []
