"""A scheduled pod stuck in a known container state, explained from the runbook's status table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.pod_status import classify


class PodStatus(TypedDict):
    pod: str
    status: str
    reason: str
    container: str
    meaning: str
    look_at: str


POD_STATUS = Code("POD_STATUS", PodStatus)


def run(facts: Facts) -> Iterator[Detection]:
    """POD_STATUS with the table row's meaning and where to look."""
    pod = facts.pod
    if pod is None:
        return
    state = classify(pod)
    if state.display_status == "Running" and state.ready:
        return  # pod.running
    rows = {str(r.get("status")): r for r in facts.table("pod_status")}
    key = state.display_status
    if key == "Running" and not state.ready:
        key = "Running-not-ready"
    if state.terminating:
        key = "Terminating"
    elif state.last_reason == "OOMKilled":
        key = "OOMKilled"  # a crash loop whose runs end in the OOM killer: the memory limit is the cause
    row = rows.get(key) or rows.get(state.reason or "")
    if row is None or key == "Pending":
        return
    ref = pod_ref(pod)
    extra = state.reason if state.reason and state.reason != state.display_status else ""
    evidence = [f"{ref}: {state.display_status}" + (f" ({extra})" if extra else "")]
    if state.detail:
        evidence.append(state.detail[:500])
    yield POD_STATUS.detect(
        pod_subject(pod),
        {
            "pod": ref,
            "status": key,
            "reason": state.reason or "",
            "container": state.container or "",
            "meaning": str(row.get("meaning", "")),
            "look_at": str(row.get("look_at", "")),
        },
        evidence=evidence,
    )


CHECK = Check(name="pod.status", reads=("pod",), emits=(POD_STATUS,), run=run, tables=("pod_status",))
