"""Run a diagnosis runbook: probes (concurrently, in dependency order), then checks, then wording.

Failures never escape as tracebacks: a probe that raises becomes a ``skipped`` entry (the rest
of the report stands), a check that raises is logged and skipped. Findings are ordered so the
most likely root cause comes first.
"""

from __future__ import annotations

import asyncio
import logging
import time

from bot.engine.context import Context, Emission
from bot.engine.runbooks import Runbook, RunbookSet, render_template
from bot.errors import GpubotError
from bot.registry import REGISTRY, load_builtin
from bot.report import Finding, Remediation, Report

log = logging.getLogger(__name__)


def _levels(names: list[str]) -> list[list[str]]:
    """Group probes so each runs after the probes it needs (those absent from the runbook are ignored)."""
    remaining = list(names)
    done: set[str] = set()
    levels: list[list[str]] = []
    while remaining:
        ready = [n for n in remaining if all(d in done or d not in names for d in REGISTRY.probes[n].needs)]
        if not ready:  # a cycle: run the rest in order rather than hang
            ready = remaining[:1]
        levels.append(ready)
        done.update(ready)
        remaining = [n for n in remaining if n not in ready]
    return levels


async def _run_probe(name: str, ctx: Context) -> None:
    try:
        await REGISTRY.probes[name].fn(ctx)
    except GpubotError as exc:
        ctx.skip(name, exc.user_message)
    except Exception as exc:  # noqa: BLE001 - a broken probe must not sink the report
        log.exception("probe %s failed", name)
        ctx.skip(name, f"internal error ({type(exc).__name__})")


def word(emission: Emission, runbooks: RunbookSet) -> Finding:
    """Turn an emission into a finding with the catalogue's wording."""
    tpl = runbooks.template(emission.code)
    params = emission.params
    remediations = emission.remediations
    if remediations is None:
        remediations = [
            Remediation(r.action, {}, render_template(r.summary, params)) for r in tpl.remediations
        ]
    return Finding(
        code=emission.code,
        severity=(emission.severity or tpl.severity),  # type: ignore[arg-type]
        title=render_template(tpl.title, params)[:150],
        evidence=emission.evidence,
        explanation=render_template(tpl.explanation, params),
        next_steps=emission.next_steps + [render_template(s, params) for s in tpl.next_steps],
        remediations=remediations,
        rank=emission.rank if emission.rank is not None else tpl.rank,
    )


async def run_diagnosis(runbook: Runbook, runbooks: RunbookSet, ctx: Context) -> Report:
    """Gather facts, apply the runbook's checks, and word the findings."""
    load_builtin()
    started = time.perf_counter()
    ctx.tables = dict(runbook.tables)
    ctx.report.command = runbook.command
    for level in _levels(list(runbook.probes)):
        await asyncio.gather(*(_run_probe(name, ctx) for name in level))
    for name in runbook.checks:
        try:
            REGISTRY.checks[name].fn(ctx)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            log.exception("check %s failed", name)
            ctx.skip(f"check {name}", f"internal error ({type(exc).__name__})")
    seen: set[tuple[str, str]] = set()
    for emission in ctx.emissions:
        finding = word(emission, runbooks)
        key = (finding.code, finding.title)
        if key in seen:
            continue
        seen.add(key)
        ctx.report.add(finding)
    ctx.report.sort()
    ctx.report.elapsed_ms = int((time.perf_counter() - started) * 1000)
    return ctx.report
