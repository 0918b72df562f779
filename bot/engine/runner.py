"""Run a diagnosis runbook: gather the facts its checks declare, run the checks, word the findings.

Failures never escape as tracebacks: a loader that fails becomes a ``skipped`` entry and an
unreadable fact (the rest of the report stands; checks resting on it do not run, and the report
opens with what could not be read), a check that raises is logged and skipped. A check that yields a code it did
not declare is a bug: refused (and, in strict mode, raised so the tests fail). Findings are
ordered so the most likely root cause comes first: severity, then the catalogue's rank.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping

from bot.engine import unreadable
from bot.engine.check import Check, Detection
from bot.engine.checks import builtin_checks
from bot.engine.consequences import answer_first, link_consequences
from bot.engine.facts import Facts, per_cluster
from bot.engine.gather import Sources, direct_facts, gather
from bot.engine.node_rows import READS as NODE_TABLE_READS
from bot.engine.node_rows import build_node_rows
from bot.engine.per_node import EARLY_WORDS, parts_of
from bot.engine.runbooks import Runbook, RunbookSet
from bot.errors import GpubotError
from bot.kube.resources import CapacityMemory, capacities_remembered
from bot.report import Finding, Report, Skipped

log = logging.getLogger(__name__)

#: strict for every diagnosis in this process, whatever the settings say: the test suite sets it
#: so that a broken check fails a test even where a test builds its own settings
STRICT_EVERYWHERE = False
#: evidence is what a finding rests on, not a log: longer lists and lines are cut, saying so
MAX_EVIDENCE_LINES = 40
MAX_EVIDENCE_CHARS = 2000
#: checks named in the "not run" skip entry; the rest are counted
SHOWN_CHECKS = 6


class UndeclaredCode(GpubotError):
    """A check emitted a code missing from its ``emits`` (a bug in the check)."""


def reads_of(runbook: Runbook, checks: Mapping[str, Check]) -> set[str]:
    """Every fact the runbook's checks (and views) read."""
    reads = {r for name in runbook.checks for r in (*checks[name].reads, *checks[name].refines)}
    if "node_table" in runbook.views:
        reads.update(NODE_TABLE_READS)
    return reads


def run_checks(
    runbook: Runbook, facts: Facts, checks: Mapping[str, Check], *, strict: bool = False
) -> list[Detection]:
    """Every check of the runbook over the same facts; none sees another's result."""
    found: list[Detection] = []
    not_run: list[str] = []
    for name in runbook.checks:
        check = checks[name]
        if facts.not_needed and direct_facts((*check.reads, *check.refines)) & facts.not_needed:
            continue  # the asked object does not exist: nothing to conclude about it (``Facts.no_subject``)
        if facts.unreadable and direct_facts(check.reads) & facts.unreadable:
            not_run.append(name)  # an unreadable fact is unknown, not empty: no conclusion
            continue
        try:
            outcomes = list(check.run(facts))
        except Exception as exc:
            if strict:
                raise
            log.exception("check %s failed", name)
            facts.skip(f"check {name}", f"internal error ({type(exc).__name__})")
            continue
        for outcome in outcomes:
            if isinstance(outcome, Skipped):
                facts.skipped.append(outcome)
            elif outcome.code not in check.emits:
                if strict:
                    raise UndeclaredCode(f"check {name} emitted {outcome.code}, which it does not declare")
                log.error("check %s emitted undeclared code %s; dropped", name, outcome.code)
            else:
                found.append(outcome)
    if not_run:
        shown = ", ".join(not_run[:SHOWN_CHECKS]) + (
            f" and {len(not_run) - SHOWN_CHECKS} more" if len(not_run) > SHOWN_CHECKS else ""
        )
        facts.skip(f"{len(not_run)} check(s): {shown}", "they rest on what could not be read")
    return found


@per_cluster("nodes")
def _capacities(facts: Facts) -> CapacityMemory:
    """The memory of ``node_gpu_capacity`` for these node objects: one for every diagnosis that
    shares them (``gpubot pending``), each asking it of the same candidate nodes."""
    return {}


def _conclude(
    runbook: Runbook,
    runbooks: RunbookSet,
    facts: Facts,
    checks: Mapping[str, Check],
    strict: bool,
    command_prefix: str,
) -> Report:
    with capacities_remembered(_capacities(facts)):  # every check and the node table ask it of the same nodes
        # what could not be read comes first: it is why the rest of the answer is incomplete
        detections = [*unreadable.detections(facts.failures), *run_checks(runbook, facts, checks, strict=strict)]
        report = Report(command=runbook.command, target=facts.inv.target())
        report.unreadable = unreadable.unique(facts.failures)
        report.findings = word(detections, runbooks, wording(command_prefix), early=facts.beside(EARLY_WORDS))
        if report.unreadable:
            _withhold_offers(report, facts)
        if "node_table" in runbook.views:
            report.nodes = build_node_rows(facts)
    if facts.gathered("target") and facts.gathered("events"):
        report.story = facts.story
    return report


def _withhold_offers(report: Report, facts: Facts) -> None:
    """An incomplete answer offers no fix: what could not be read may hold the real cause (or
    show the fix to be harmful), and a button is a recommendation. The findings keep their next
    steps; the fixes come back once the reads work."""
    withheld = sum(len(f.remediations) for f in report.findings)
    for finding in report.findings:
        finding.remediations = []
    if withheld:
        facts.skip(f"{withheld} fix(es)", "not offered: the answer is incomplete; run it again once the reads work")


def capped(evidence: Iterable[str]) -> list[str]:
    """At most ``MAX_EVIDENCE_LINES`` lines of at most ``MAX_EVIDENCE_CHARS``, saying what was cut."""
    lines = list(evidence)
    out = [ln if len(ln) <= MAX_EVIDENCE_CHARS else ln[: MAX_EVIDENCE_CHARS - 1] + "…" for ln in lines]
    if len(out) > MAX_EVIDENCE_LINES:
        out = out[: MAX_EVIDENCE_LINES - 1] + [f"… {len(lines) - MAX_EVIDENCE_LINES + 1} more line(s)"]
    return out


def wording(command_prefix: str) -> dict[str, object]:
    """What every finding's text may name besides its own parameters: the command to type."""
    return {"gpubot": command_prefix}


def render(d: Detection, runbooks: RunbookSet, extra: Mapping[str, object]) -> Finding:
    """One detection in the catalogue's words (a new ``Finding``: its caller may change it)."""
    finding = runbooks.template(d.code).render({**d.params, **extra}, evidence=capped(d.evidence), role=d.role)
    finding.subject = d.subject
    return finding


def word(
    detections: Iterable[Detection],
    runbooks: RunbookSet,
    extra: Mapping[str, object],
    *,
    early: Mapping[int, tuple[Detection, Finding]] | None = None,
) -> list[Finding]:
    """Findings in the catalogue's words, redundant ones (``unless:``) and repeats dropped, sorted,
    consequences of another finding marked (``consequence_of:``). ``early``: detections already
    worded as their node answered (``bot.engine.per_node.EARLY_WORDS``), each taken at most once."""
    detections = list(detections)
    present = {d.code for d in detections}
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    early = dict(early or {})
    for d in detections:
        template = runbooks.template(d.code)
        if template.suppressed_by(present):
            continue
        kept = early.pop(id(d), None)
        finding = kept[1] if kept is not None and kept[0] is d else render(d, runbooks, extra)
        key = (finding.code, finding.title)
        if key not in seen:
            seen.add(key)
            findings.append(finding)
    findings.sort(key=Finding.sort_key)
    link_consequences(findings, lambda code: runbooks.template(code).consequence_of)
    return answer_first(findings)


async def run_diagnosis(
    runbook: Runbook,
    runbooks: RunbookSet,
    facts: Facts,
    sources: Sources,
    *,
    command_prefix: str = "gpubot",
    checks: Mapping[str, Check] | None = None,
    strict: bool = False,
) -> Report:
    """Gather facts, apply the runbook's checks, and word the findings."""
    checks = checks if checks is not None else builtin_checks()
    strict = strict or STRICT_EVERYWHERE
    started = time.perf_counter()
    facts.node_table = "node_table" in runbook.views
    facts.early_parts = parts_of(checks[name] for name in runbook.checks)
    extra = wording(command_prefix)
    facts.early_words = lambda d: render(d, runbooks, extra)
    await gather(facts, sources, reads_of(runbook, checks))
    sources.progress(f"running {len(runbook.checks)} checks")
    # checks and wording are pure CPU: in a worker thread the event loop keeps answering (Slack acks)
    report = await asyncio.to_thread(_conclude, runbook, runbooks, facts, checks, strict, command_prefix)
    report.skipped = list(facts.skipped)
    report.elapsed_ms = int((time.perf_counter() - started) * 1000)
    return report
