"""Pending actions, approvers, expiry, single use and the audit trail.

Everything that changes a cluster passes through here first: an offer becomes a pending record,
a click is checked against the approver policy, claimed atomically (at most one execution),
re-checked, run and audited. This package decides and records; it never performs an action
itself and never imports Slack or ``bot.actions``.
"""

from bot.confirm.audit import AUDIT_EVENTS, AuditEntry, AuditLog, format_audit, parse_since
from bot.confirm.flow import ClickOutcome, ClickStatus, ConfirmFlow, RunOutcome
from bot.confirm.ids import is_well_formed, new_action_id
from bot.confirm.policy import ApproverPolicy, Decision
from bot.confirm.sqlite_store import SqliteAuditLog, SqliteDatabase, SqlitePendingStore, open_state
from bot.confirm.store import STATES, TERMINAL_STATES, ClaimResult, PendingAction, PendingStore

__all__ = [
    "AUDIT_EVENTS",
    "STATES",
    "TERMINAL_STATES",
    "ApproverPolicy",
    "AuditEntry",
    "AuditLog",
    "ClaimResult",
    "ClickOutcome",
    "ClickStatus",
    "ConfirmFlow",
    "Decision",
    "PendingAction",
    "PendingStore",
    "RunOutcome",
    "SqliteAuditLog",
    "SqliteDatabase",
    "SqlitePendingStore",
    "format_audit",
    "is_well_formed",
    "new_action_id",
    "open_state",
    "parse_since",
]
