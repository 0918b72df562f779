"""Which findings of one report a cause in the same report explains (``consequence_of``)."""

from __future__ import annotations

from bot.engine.consequences import answer_first, link_consequences
from bot.report import Finding

CAUSES = {
    "LEAK_LOGICAL_NOT_PHYSICAL": ("CHECKPOINT_ZOMBIE",),
    "SCHED_QGPU_ALLOC_FAILED": ("CHECKPOINT_ZOMBIE", "LEAK_LOGICAL_NOT_PHYSICAL"),
}


def _f(code: str, subject: str) -> Finding:
    return Finding(code, "critical", code.lower(), subject=subject)


def _link(*findings: Finding) -> list[str]:
    link_consequences(findings, lambda code: CAUSES.get(code, ()))
    return [f.explained_by for f in findings]


def test_a_node_finding_is_explained_only_by_a_cause_on_the_same_node() -> None:
    zombie, leak_a, leak_b = _f("CHECKPOINT_ZOMBIE", "node/a"), _f("LEAK_LOGICAL_NOT_PHYSICAL", "node/a"), _f(
        "LEAK_LOGICAL_NOT_PHYSICAL", "node/b")
    assert _link(zombie, leak_a, leak_b) == ["", "CHECKPOINT_ZOMBIE", ""]


def test_a_pod_finding_is_explained_by_a_cause_on_any_node_and_chains_end_at_the_root() -> None:
    findings = (_f("CHECKPOINT_ZOMBIE", "node/a"), _f("SCHED_QGPU_ALLOC_FAILED", "pod/ai/p"))
    assert _link(*findings) == ["", "CHECKPOINT_ZOMBIE"]
    # the leak alone explains the failure; with the zombie present, the zombie is the root of both
    assert _link(_f("LEAK_LOGICAL_NOT_PHYSICAL", "node/b"), _f("SCHED_QGPU_ALLOC_FAILED", "pod/ai/p")) == [
        "", "LEAK_LOGICAL_NOT_PHYSICAL"]
    chain = (_f("LEAK_LOGICAL_NOT_PHYSICAL", "node/a"), _f("SCHED_QGPU_ALLOC_FAILED", "pod/ai/p"),
             _f("CHECKPOINT_ZOMBIE", "node/a"))
    assert _link(*chain) == ["CHECKPOINT_ZOMBIE", "CHECKPOINT_ZOMBIE", ""]


def test_nothing_to_explain_leaves_findings_alone() -> None:
    assert _link(_f("SCHED_QGPU_ALLOC_FAILED", "pod/ai/p")) == [""]


def test_the_cause_of_what_was_asked_goes_before_causes_of_nothing_asked() -> None:
    """A zombie on a full node (rank 11) beside a Terminating pod whose cards the pending pod needs
    (rank 16): the holder explains the scheduler's refusal, so it is read first; severity still
    decides before that, and a report where nothing about the pod is explained keeps its order."""
    causes = {"SCHED_INSUFFICIENT_GPU": ("TERMINATING_HOLDS_GPU",)}
    zombie = Finding("CHECKPOINT_ZOMBIE", "critical", "zombie", rank=11, subject="node/a")
    holder = Finding("TERMINATING_HOLDS_GPU", "critical", "holder", rank=16, subject="node/b")
    refused = Finding("SCHED_INSUFFICIENT_GPU", "critical", "refused", rank=28, subject="pod/ai/p")
    note = Finding("GPU_IDLE", "info", "idle", rank=1, subject="node/a")
    warning = Finding("TAINT", "warning", "w", rank=1, subject="node/c")
    findings = sorted([note, refused, holder, warning, zombie], key=Finding.sort_key)
    link_consequences(findings, lambda code: causes.get(code, ()))
    assert [f.code for f in answer_first(findings)] == [
        "TERMINATING_HOLDS_GPU", "CHECKPOINT_ZOMBIE", "SCHED_INSUFFICIENT_GPU", "TAINT", "GPU_IDLE"]
    alone = sorted([zombie, holder], key=Finding.sort_key)
    link_consequences(alone, lambda code: causes.get(code, ()))
    assert answer_first(alone) == alone
