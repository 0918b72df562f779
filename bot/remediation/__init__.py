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
    outcomes.py      RunOutcome (each step's real outcome) and ClickOutcome, for the views
    policy.py        ApproverPolicy: who may approve which action, the two-person rule
    audit.py         ``gpubot audit`` formatting (``--since``, the table, JSON lines)
    terminal.py      ``gpubot act`` and ``gpubot audit``

The records (PendingAction, AuditEntry), their stores' contracts and both backends are in
``bot.state``. The decision layer (flow, journal, outcomes, policy, audit) imports neither the
actions nor a Kubernetes client; only ``service`` and ``terminal`` bind it to the actions.
"""

from bot.remediation.flow import ClickOutcome
from bot.remediation.policy import Approvers
from bot.remediation.service import ClusterClients, RemediationService
from bot.state.records import PendingAction

__all__ = ["Approvers", "ClickOutcome", "ClusterClients", "PendingAction", "RemediationService"]
