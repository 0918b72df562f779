"""Remediation: everything between "a diagnosis offers a fix" and "it ran once, or was refused".

An offer becomes a pending record; a click is checked against the approver policy, claimed
atomically (at most one execution), its precondition re-probed, the action run, and every step
audited in a trail that survives a restart. ``RemediationService`` is the one entry; it takes the
cluster clients from its caller (``ClusterClients``) and the actions from ``bot.actions``, the only
code that writes to a cluster or a node. Nothing here knows Slack: views (``bot.slack``, the CLI)
word the outcome.

    service.py       RemediationService: offer, click, sweep_expired, recover
    flow.py          ConfirmFlow: policy → claim → precondition → run → audit, for any action; recovery
    journal.py       a running action's state and steps written before each step; its heartbeat
    policy.py        ApproverPolicy: who may approve which action, the two-person rule
    store.py         PendingAction and the PendingStore contract (claim at most once, one per node)
    audit.py         AuditEntry, the AuditLog contract, ``gpubot audit`` formatting
    sqlite_store.py  the embedded store, audit trail and seen Slack requests (one SQLite file)
    ids.py           unguessable offer ids
    terminal.py      ``gpubot act`` and ``gpubot audit``

The decision layer (flow, journal, policy, store, audit, sqlite_store, ids) imports neither the
actions nor a Kubernetes client; only ``service`` and ``terminal`` bind it to the actions.
"""

from bot.remediation.flow import ClickOutcome
from bot.remediation.service import ClusterClients, RemediationService
from bot.remediation.store import PendingAction

__all__ = ["ClickOutcome", "ClusterClients", "PendingAction", "RemediationService"]
