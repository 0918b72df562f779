"""What a click and a run come to, as plain data for the views (Slack, the CLI) to word.

``RunOutcome`` is what an action reports, each step with its real outcome (``StepResult``);
``ClickOutcome`` is the answer to one click, whether it ran, was refused or could not be claimed.
No logic beyond the two questions a view asks: did it execute, does the offer message change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bot.remediation.policy import Approvers
from bot.state.records import PendingAction

ClickStatus = Literal[
    "unknown",
    "not_allowed",
    "approval_requested",
    "denied",
    "expired",
    "already_taken",
    "busy",
    "unavailable",
    "precondition_failed",
    "not_run",
    "succeeded",
    "failed",
]


@dataclass(frozen=True)
class StepResult:
    """One step as it happened: ``line`` reads ``ok: cordon node x — detail``."""

    line: str
    #: ok, failed, skipped or planned: the outcome the audit trail records
    status: str
    #: already in the audit trail (written live as it happened)
    audited: bool = False


@dataclass(frozen=True)
class RunOutcome:
    """What an action reports when it returns (rather than raises)."""

    ok: bool
    #: one line for people
    summary: str
    #: what it did, in order, with each step's real outcome
    steps: list[StepResult] = field(default_factory=list)


@dataclass(frozen=True)
class ClickOutcome:
    """The answer to one click, for the view to render."""

    status: ClickStatus
    #: one line for people, no traceback
    message: str
    #: the record as it stands after the click (``None`` for an unknown id)
    action: PendingAction | None = None
    steps: tuple[str, ...] = ()
    #: ``approval_requested``: who may approve it (the view asks them)
    asked: Approvers | None = None
    #: ``approval_requested``: the clicker is an approver stopped only by the two-person rule, so
    #: their click is the first approval and another approver must second it
    first_approval: bool = False
    #: runs a dead process left on the node, restored and recorded ``interrupted`` by this click
    #: when it took the node (their lock ran out after the caller last looked): the view says so
    recovered: tuple[PendingAction, ...] = ()

    @property
    def executed(self) -> bool:
        """The action ran (to success or failure) because of this click."""
        return self.status in ("succeeded", "failed")

    @property
    def updates_offer(self) -> bool:
        """The offer message should be replaced: its buttons no longer apply.

        False for refusals that leave the offer as it was (not an approver, unknown id, a busy
        node, a store that could not be reached) and for a click that lost the race: the winner
        updates the message.
        """
        return self.status in ("expired", "precondition_failed", "not_run", "succeeded", "failed", "denied")
