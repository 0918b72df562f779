"""The FIX column of ``gpubot pending``: one line, the first fix, and how many more like it."""

from __future__ import annotations

from bot.pending.run import FIX_CHARS, short_fix
from bot.report import Finding, Remediation


def _finding(*summaries: str, action: str = "pod.delete", steps: tuple[str, ...] = ()) -> Finding:
    return Finding(
        code="TERMINATING_HOLDS_GPU",
        severity="warning",
        title="2 pod(s) stuck Terminating still hold GPU resources on gpu-1",
        remediations=[Remediation(action, {"pod": s}, s) for s in summaries],
        next_steps=list(steps),
    )


def test_the_same_action_on_several_objects_says_how_many_more() -> None:
    f = _finding("Delete ml/a again gracefully", "Delete ml/b again gracefully", "Delete ml/c again gracefully")
    assert short_fix(f) == "Delete ml/a again gracefully (+2 more)"


def test_other_actions_are_not_counted_and_one_fix_has_no_tail() -> None:
    f = _finding("Delete ml/a again gracefully")
    f.remediations.append(Remediation("node.uncordon", {"node": "gpu-1"}, "Uncordon gpu-1"))
    assert short_fix(f) == "Delete ml/a again gracefully"


def test_a_long_fix_is_cut_at_a_word_and_keeps_its_count() -> None:
    long = "Delete ml/" + "x" * 20 + " again gracefully, waiting thirty seconds and never forcing it at all"
    text = short_fix(_finding(long, long))
    assert len(text) <= FIX_CHARS and text.endswith("… (+1 more)")


def test_without_offers_the_first_next_step_and_without_a_finding_a_pointer() -> None:
    assert short_fix(_finding(steps=("Ask the owner",))) == "Ask the owner"
    assert short_fix(None) == "nothing found: run why-pending on it"
