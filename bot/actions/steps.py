"""Running an action's steps one after the other, recording each outcome, stopping at the first failure.

A step is a description plus a coroutine. ``StepLog.run`` tells the live audit trail the step is
starting (so a crash mid-step leaves a trace of where it was), awaits it, and records ``ok`` or
``failed`` with a one-line reason. A failure raises ``StepFailed`` so the action stops there and
restores what it can; nothing after a failed step is attempted.

This module must never decide what to restore; the action that knows what it changed does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

from bot.actions.base import ActionContext, StepOutcome
from bot.errors import GpubotError, error_text

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class StepFailed(Exception):
    """A step failed; ``step`` is its recorded outcome."""

    def __init__(self, step: StepOutcome) -> None:
        super().__init__(step.line())
        self.step = step


class StepLog:
    """The steps of one run, in order."""

    def __init__(self, ctx: ActionContext) -> None:
        self.ctx = ctx
        self.steps: list[StepOutcome] = []

    async def run(self, what: str, work: Awaitable[_T], *, detail: str = "") -> _T:
        """Await ``work`` as the step ``what``; record it; raise ``StepFailed`` if it fails."""
        if self.ctx.on_step is not None:
            try:
                self.ctx.on_step(f"starting: {what}")
            except Exception:  # noqa: BLE001 - the audit write must not stop a half-done action
                log.exception("could not record the start of step %r", what)
        try:
            result = await work
        except (GpubotError, OSError, TimeoutError, ValueError) as exc:
            step = StepOutcome(what, "failed", error_text(exc))
            self.steps.append(step)
            raise StepFailed(step) from None
        self.steps.append(StepOutcome(what, "ok", detail or (result if isinstance(result, str) else "")))
        return result

    def skip(self, what: str, why: str) -> None:
        self.steps.append(StepOutcome(what, "skipped", why))

    def note(self, what: str, status: str, detail: str = "") -> None:
        """Record an outcome computed elsewhere (e.g. a restore attempt that must not raise)."""
        self.steps.append(StepOutcome(what, "ok" if status == "ok" else "failed", detail))
