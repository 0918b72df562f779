"""``pending``: every GPU pod of a namespace (or the cluster) that does not run, grouped by cause.

The on-call question is not "why is this pod pending" but "what GPU work is stuck, and why".
The answer lists the pending GPU pods (one line per workload: its pods, how long the oldest has
waited, and the fix in a few words) under the root cause ``why-pending`` finds for them, the
worst cause first. It is the same engine: each pod diagnosed is a full ``why-pending`` through the
service. A big cluster can hold hundreds of pending GPU pods, so at most ``MAX_DIAGNOSED`` are
diagnosed (the longest waiting first, a few at a time) and the rest are named in one skipped
line with their count per namespace; nothing is concluded about a pod that was not diagnosed.
"""

from __future__ import annotations

import asyncio
import textwrap
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from bot.commands import Invocation
from bot.engine.progress import Progress, no_progress
from bot.kube.resources import pod_gpu_requests
from bot.probes.kube import KubeReads
from bot.report import SEVERITY_RANK, Finding, Remediation, Report
from bot.report_groups import fix_key, group_findings, verdict

#: how many pending pods get a full diagnosis; the rest are counted, not diagnosed
MAX_DIAGNOSED = 20
#: diagnoses at a time (each reads the API and some nodes)
CONCURRENCY = 4
#: the fix of one line, in a few words
FIX_WIDTH = 90

Diagnose = Callable[[Invocation], Awaitable[Report]]


@dataclass
class _Cause:
    """The pending pods one root cause explains, and the words of its first diagnosis."""

    lead: Finding
    rows: dict[tuple[str, str], list[tuple[str, str, str]]] = field(default_factory=dict)
    remediations: dict[Any, Remediation] = field(default_factory=dict)

    @property
    def pods(self) -> int:
        return sum(len(v) for v in self.rows.values())


def _workload(pod: Mapping[str, Any]) -> str:
    """``replicaset/x``, ``job/y``, or ``pod/z`` for a bare pod: what a person would act on."""
    meta = pod.get("metadata") or {}
    owner = next(iter(meta.get("ownerReferences") or []), None)
    if owner:
        return f"{str(owner.get('kind', '')).lower()}/{owner.get('name', '')}"
    return f"pod/{meta.get('name', '')}"


def _created(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def age(created: str, now: datetime) -> str:
    """``3h``, ``2d``: how long ago ``created`` (RFC 3339) was; ``?`` when unknown."""
    try:
        then = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


async def pending_report(
    kube: KubeReads,
    inv: Invocation,
    diagnose: Diagnose,
    *,
    progress: Progress = no_progress,
    now: datetime | None = None,
) -> Report:
    """The pending GPU pods of ``inv.namespace`` (every namespace with ``inv.all_namespaces``),
    diagnosed (at most ``MAX_DIAGNOSED``) and grouped by root cause, worst first."""
    now = now or datetime.now(UTC)
    scope = "" if inv.all_namespaces else inv.namespace
    report = Report(command="pending", target={"namespace": scope or "*"})
    progress("listing pending pods" + (f" in {scope}" if scope else " in every namespace"))
    pods = await kube.list_pods(scope, field_selector="status.phase=Pending")
    gpu = sorted((p for p in pods if pod_gpu_requests(p)), key=_created)
    chosen, rest = gpu[:MAX_DIAGNOSED], gpu[MAX_DIAGNOSED:]
    slots = asyncio.Semaphore(CONCURRENCY)
    done = 0

    async def one(pod: Mapping[str, Any]) -> tuple[Mapping[str, Any], Report]:
        nonlocal done
        meta = pod.get("metadata") or {}
        async with slots:
            answer = await diagnose(replace(inv, command="why-pending", kind="Pod", name=str(meta.get("name", "")),
                                            namespace=str(meta.get("namespace", "")), all_namespaces=False))
        done += 1
        progress(f"diagnosing pending GPU pods: {done} of {len(chosen)}")
        return pod, answer

    causes: dict[str, _Cause] = {}
    for pod, answer in await asyncio.gather(*(one(p) for p in chosen)):
        _add(causes, pod, answer, now)
        for skip in answer.skipped:
            if skip not in report.skipped:
                report.skipped.append(skip)
        for unread in answer.unreadable:  # an incomplete diagnosis makes the list incomplete too
            if unread not in report.unreadable:
                report.unreadable.append(unread)
    ordered = sorted(causes.values(), key=lambda c: (SEVERITY_RANK.get(c.lead.severity, 9), -c.pods, c.lead.rank))
    report.findings = [_finding(c) for c in ordered]
    if rest:
        by_ns = Counter(str((p.get("metadata") or {}).get("namespace", "")) for p in rest)
        where = ", ".join(f"{ns} {n}" for ns, n in by_ns.most_common(10))
        report.skip(f"a diagnosis of {len(rest)} more pending GPU pod(s) ({where})",
                    f"at most {MAX_DIAGNOSED} are diagnosed, the longest waiting first; "
                    "why-pending POD -n NAMESPACE diagnoses one")
    return report


def _add(causes: dict[str, _Cause], pod: Mapping[str, Any], answer: Report, now: datetime) -> None:
    groups = group_findings(answer.findings)
    if not groups:
        return
    top = groups[0]
    found = verdict(answer)
    cause = causes.setdefault(top.code, _Cause(top.lead))
    meta = pod.get("metadata") or {}
    key = (str(meta.get("namespace", "")), _workload(pod))
    fix = textwrap.shorten(found.fix if found else "", FIX_WIDTH, placeholder=" …")
    cause.rows.setdefault(key, []).append((str(meta.get("name", "")), age(_created(pod), now), fix))
    for fix_ in top.fixes:
        cause.remediations.setdefault(fix_key(fix_.action, fix_.remediation.params), fix_.remediation)


def _finding(cause: _Cause) -> Finding:
    """One line per workload under its cause: ``ns/workload: 3 pod(s), oldest 2h — fix``."""
    evidence = []
    for (namespace, workload), rows in cause.rows.items():
        oldest = rows[0]
        pods = f"{len(rows)} pods" if len(rows) > 1 else f"pod {oldest[0]}"
        evidence.append(f"{namespace}/{workload}: {pods}, waiting {oldest[1]} — {oldest[2]}".rstrip(" —"))
    lead = cause.lead
    return Finding(
        code=lead.code,
        severity=lead.severity,
        title=f"{cause.pods} pending GPU pod(s): {lead.title}",
        evidence=evidence,
        explanation=lead.explanation,
        next_steps=list(lead.next_steps),
        remediations=list(cause.remediations.values()),
        rank=lead.rank,
        subject=lead.subject,
    )
