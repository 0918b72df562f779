"""The text of ``runbook`` and ``help``: runbooks and the command table only.

Kept apart from ``bot.service`` so that the CLI's ``gpubot runbook`` and ``gpubot help`` start
without importing the Kubernetes client or asyncssh (a second or more of imports they never use).
"""

from __future__ import annotations

from bot.commands import Invocation, Surface, command_prefix, help_lines
from bot.engine.runbooks import RunbookSet, list_guides, render_guide_text
from bot.errors import UsageError
from bot.names import shown
from bot.report import Report
from bot.suggest import did_you_mean


def help_text(runbooks: RunbookSet, surface: Surface = "cli") -> str:
    """``/gpu help`` or ``gpubot help``: the commands offered there (from the command table),
    then the guides."""
    lines = help_lines(surface)
    lines += ["", f"Guides ({command_prefix(surface)} runbook NAME):"]
    lines += [f"  {name}: {summary}" for name, summary in list_guides(runbooks)]
    return "\n".join(lines)


def runbook_report(runbooks: RunbookSet, inv: Invocation) -> Report:
    """``runbook``: the list of guides and diagnosis runbooks, or one guide's text."""
    if not inv.topic:
        lines = [f"Runbooks ({command_prefix(inv.surface)} runbook NAME):"]
        lines += [f"  {name}: {summary}" for name, summary in list_guides(runbooks)]
        lines += [f"  {c} (diagnosis): {rb.summary}" for c, rb in sorted(runbooks.diagnoses.items())]
        return Report(command="runbook", target={}, text="\n".join(lines))
    guide = runbooks.guides.get(inv.topic)
    if guide is None:
        names = ", ".join(sorted(runbooks.guides))
        hint = did_you_mean(inv.topic, runbooks.guides)
        raise UsageError(f"unknown runbook {shown(inv.topic)}{hint}" + ("" if hint else f"; available: {names}"))
    return Report(command="runbook", target={"topic": inv.topic}, text=render_guide_text(guide))
