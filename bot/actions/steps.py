"""Running an action's steps one after the other, recording each outcome, stopping at the first failure.

A step is a description plus a coroutine. ``StepLog.run`` first has the journal write the
action's state and "starting: <step>" (so a crash mid-step leaves a trace of where it was, and a
restarted bot knows what to restore); if that cannot be written the step does not run and counts
as failed. Then it awaits the step and records ``ok`` or ``failed`` with a one-line reason, as
it really ended. A failure raises ``StepFailed`` so the action stops there and restores what it
can; nothing after a failed step is attempted. Restore steps go through ``note``/``skip``: they
are recorded as they ended but never blocked by the journal (putting a node back is worth more
than its paperwork).

This module must never decide what to restore; the action that knows what it changed does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from bot.actions.base import ActionContext, StepOutcome, StepStatus
from bot.errors import GpubotError, error_text

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class StepFailed(Exception):
    """A step failed; ``step`` is its recorded outcome."""

    def __init__(self, step: StepOutcome) -> None:
        super().__init__(step.line())
        self.step = step


class StepLog:
    """The steps of one run, in order, and the state the journal writes before each."""

    def __init__(self, ctx: ActionContext) -> None:
        self.ctx = ctx
        self.steps: list[StepOutcome] = []

    async def run(
        self,
        what: str,
        work: Coroutine[Any, Any, _T],
        *,
        detail: str = "",
        progress: Mapping[str, Any] | None = None,
    ) -> _T:
        """Record ``progress`` and the start, await ``work`` as the step ``what``, record how it
        ended; raise ``StepFailed`` if it failed or could not be recorded first."""
        if self.ctx.journal is not None:
            try:
                await self.ctx.journal.before(what, {**(progress or {}), "step": what})
            except GpubotError as exc:
                work.close()  # never started: nothing was sent
                await self._add(StepOutcome(what, "failed", f"not run: {error_text(exc)}"))
                raise StepFailed(self.steps[-1]) from None
            except BaseException:
                work.close()  # cancelled while recording: the step never started
                raise
        try:
            result = await work
        except asyncio.CancelledError:
            await self._add(StepOutcome(what, "failed", "cancelled while it ran; its outcome is unknown"))
            raise
        except (GpubotError, OSError, TimeoutError, ValueError) as exc:
            await self._add(StepOutcome(what, "failed", error_text(exc)))
            raise StepFailed(self.steps[-1]) from None
        await self._add(StepOutcome(what, "ok", detail or (result if isinstance(result, str) else "")))
        return result

    async def skip(self, what: str, why: str) -> None:
        await self._add(StepOutcome(what, "skipped", why))

    async def note(self, what: str, status: StepStatus, detail: str = "") -> None:
        """Record an outcome computed elsewhere (e.g. a restore attempt that must not raise)."""
        await self._add(StepOutcome(what, status, detail))

    async def _add(self, step: StepOutcome) -> None:
        audited = False
        if self.ctx.journal is not None:
            audited = await self.ctx.journal.after(step.line(), step.status)
        self.steps.append(StepOutcome(step.what, step.status, step.detail, audited=audited))
