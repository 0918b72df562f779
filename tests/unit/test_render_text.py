"""The terminal text: one entry per cause, each action offered once however many nodes share it,
the verdict's fix the first fix the entry lists, and consequences folded under their cause."""

from __future__ import annotations

from bot.console import render_text as render_text_module
from bot.console.render_text import MAX_TARGETS_LISTED, render_text
from bot.report import Finding, NodeRow, Remediation, Report
from bot.views.groups import WHERE_NAMES_SHOWN


def _zombie(node: str, *, qgpu: bool = True) -> Finding:
    """A zombie checkpoint entry on ``node``: a qGPU node's first fix is the qGPU manager, an
    NVIDIA node's (``qgpu=False``) the kubelet."""
    manager = [Remediation("qgpu.restart-manager", {"node": node}, f"Restart the qgpu-manager pod on {node}")]
    return Finding(
        code="CHECKPOINT_ZOMBIE",
        severity="critical",
        title=f"The kubelet checkpoint on {node} holds devices of pods that no longer exist",
        subject=f"node/{node}",
        remediations=[
            *(manager if qgpu else []),
            Remediation("kubelet.restart", {"node": node}, f"Cordon {node}, restart kubelet, uncordon"),
        ],
    )


def _offers(text: str) -> list[str]:
    lines = text.splitlines()
    return [ln.strip() for ln in lines if ln.strip().startswith(("=>", "the same for"))]


def test_an_action_on_many_nodes_is_one_offer_and_one_line_of_other_targets() -> None:
    nodes = [f"gpu-{i:02d}" for i in range(30)]
    text = render_text(Report("node-status", {}, findings=[_zombie(n) for n in nodes]))
    offers = _offers(text)
    assert [ln.split(":")[0] for ln in offers if ln.startswith("=>")] == [
        "=> Restart qgpu-manager · gpu-00",
        "=> Restart kubelet · gpu-00",
    ]
    same = [ln for ln in offers if ln.startswith("the same for")]
    assert len(same) == 2  # one per action (a line of text may wrap, the list is one entry)
    joined = " ".join(text.split())
    listed = ", ".join(nodes[1 : 1 + MAX_TARGETS_LISTED])
    assert f"the same for {listed} and {30 - 1 - MAX_TARGETS_LISTED} more" in joined
    # least invasive first: the manager restart before the kubelet restart
    assert joined.index("Restart qgpu-manager · gpu-00") < joined.index("Restart kubelet · gpu-00")
    assert "run: gpubot act qgpu.restart-manager --node gpu-00" in text


def test_one_node_has_no_same_for_line() -> None:
    text = render_text(Report("node-status", {}, findings=[_zombie("gpu-00")]))
    assert _offers(text) == [
        "=> Restart qgpu-manager · gpu-00: Restart the qgpu-manager pod on gpu-00",
        "=> Restart kubelet · gpu-00: Cordon gpu-00, restart kubelet, uncordon",
    ]


def test_the_verdicts_fix_is_the_first_fix_listed() -> None:
    text = render_text(Report("node-status", {}, findings=[_zombie("gpu-00"), _zombie("gpu-01")]))
    verdict = " ".join(text.split("\n\n")[1].split())
    assert verdict.endswith("fix: Restart qgpu-manager on gpu-00, gpu-01 Found: 1 cause.")
    first = text.index("Fix, least invasive first:")
    assert text.index("=> Restart qgpu-manager · gpu-00", first) < text.index("=> Restart kubelet", first)


def test_a_consequence_is_folded_under_its_cause_with_its_evidence() -> None:
    leak = Finding("LEAK_LOGICAL_NOT_PHYSICAL", "critical", "GPU resources on gpu-00 are allocated but idle",
                   evidence=["gpu-00 nvidia-smi: 0 process(es)"], explanation="A leak.", next_steps=["Restart X"],
                   subject="node/gpu-00", explained_by="CHECKPOINT_ZOMBIE")
    alloc = Finding("SCHED_QGPU_ALLOC_FAILED", "critical", "The qGPU scheduler could not place ai/p",
                    evidence=["failed to allocate (100, 0, 1)"], subject="pod/ai/p", explained_by="CHECKPOINT_ZOMBIE")
    text = render_text(Report("why-pending", {"kind": "Pod", "name": "p", "namespace": "ai"},
                              findings=[_zombie("gpu-00"), leak, alloc]))
    assert "Found: 1 cause, 2 consequences." in text
    assert "\n2. " not in text  # one numbered entry: the cause
    folded = text[text.index("1a. [CRITICAL] LEAK_LOGICAL_NOT_PHYSICAL"):]
    assert folded.index("explained by CHECKPOINT_ZOMBIE") < folded.index("| gpu-00 nvidia-smi: 0 process(es)")
    assert "1b. [CRITICAL] SCHED_QGPU_ALLOC_FAILED" in folded and "| failed to allocate (100, 0, 1)" in folded
    assert "A leak." not in text  # the cause's explanation stands for its consequences


def test_a_step_that_introduces_a_snippet_is_not_a_verdict_ending_on_a_colon() -> None:
    snippet = "Add this toleration to the pod template (spec.tolerations):\n- key: gpu\n  operator: Exists"
    taint = Finding("SCHED_UNTOLERATED_TAINT", "critical", "Every GPU node has a taint ai/p does not tolerate",
                    next_steps=[snippet, "Background: gpubot runbook guide-taints-tolerations"], subject="pod/ai/p")
    text = render_text(Report("why-pending", {"kind": "Pod", "name": "p", "namespace": "ai"}, findings=[taint]))
    verdict = " ".join(text.split("\n\n")[1].split())
    fix = "fix: Add this toleration to the pod template (spec.tolerations), as shown in the next steps"
    assert fix in verdict
    assert not verdict.split(" Found:")[0].endswith(":")


def test_the_verdict_of_a_mixed_group_names_the_first_fix_of_every_member() -> None:
    findings = [_zombie("gpu-00"), _zombie("gpu-01"), _zombie("gpu-02", qgpu=False), _zombie("gpu-03", qgpu=False)]
    text = render_text(Report("node-status", {}, findings=findings))
    verdict = " ".join(text.split("\n\n")[1].split())
    assert "fix: Restart qgpu-manager on gpu-00, gpu-01; Restart kubelet on gpu-02, gpu-03 Found:" in verdict


def _busy(node: str, cards: int) -> Finding:
    evidence = [f"{node} GPU{i} busy: 20480 MiB, 71°C, 240 W" for i in range(cards)]
    return Finding("GPU_BUSY", "info", f"{cards} GPU(s) on {node} are really working", evidence=evidence,
                   subject=f"node/{node}")


def test_a_note_on_a_whole_fleet_shows_the_first_nodes_and_counts_the_rest() -> None:
    nodes = [f"gpu-{i:03d}" for i in range(40)]
    report = Report("node-status", {}, findings=[_busy(n, 8) for n in nodes])
    text = render_text(report)
    evidence = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    # two nodes' whole evidence (8 lines each), then one line counting the rest
    assert evidence[:16] == [f"| {line}" for n in nodes[:2] for line in _busy(n, 8).evidence]
    assert evidence[16:] == ["| … 304 more line(s) about 38 more node(s): -o wide shows every one"]
    titles = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("* ")]
    assert titles[-1] == f"* … and {40 - render_text_module.TITLES_SHOWN} more (-o wide lists every one)"
    assert len(titles) == render_text_module.TITLES_SHOWN + 1
    head = " ".join(text.split("\n\n")[2].split("*")[0].split())
    assert head.endswith(f"{nodes[WHERE_NAMES_SHOWN - 1]} and {40 - WHERE_NAMES_SHOWN} more")
    # the verdict counts the rest too
    said = " ".join(text.split("\n\n")[1].split())
    assert f"{nodes[WHERE_NAMES_SHOWN - 1]} and {40 - WHERE_NAMES_SHOWN} more Found: 1 note." in said
    wide = render_text(report, width=100_000, full=True)
    assert sum(1 for ln in wide.splitlines() if ln.strip().startswith("|")) == 40 * 8
    assert sum(1 for ln in wide.splitlines() if ln.strip().startswith("* ")) == 40
    assert "more" not in wide.split("\n\n")[2].splitlines()[0]


def test_the_first_members_evidence_is_shown_even_when_it_alone_is_long() -> None:
    text = render_text(Report("node-status", {}, findings=[_busy("gpu-a", 40), _busy("gpu-b", 2)]))
    evidence = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    assert len(evidence) == render_text_module.EVIDENCE_LINES_SHOWN + 1
    assert evidence[0] == "| gpu-a GPU0 busy: 20480 MiB, 71°C, 240 W"
    assert evidence[-1] == "| … 2 more line(s) about 1 more node(s): -o wide shows every one"


def test_the_verdict_comes_before_the_node_table() -> None:
    report = Report("node-status", {}, findings=[_zombie("gpu-00")])
    report.nodes = [NodeRow(node=f"gpu-{i:02d}", ready=True, cordoned=False, ssh="ok") for i in range(3)]
    text = render_text(report)
    assert text.index("Root cause:") < text.index("node gpu-00  [Ready]") < text.index("1. [CRITICAL]")


def test_a_report_of_notes_only_names_no_root_cause() -> None:
    """A running pod or cards really in use is context: no root cause, and its step is what to look
    at next, not a fix. A warning is a problem and keeps both words."""
    running = Finding("POD_RUNNING", "info", "ai/p is running on node gpu-00", subject="pod/ai/p",
                      next_steps=["Read GPU load on the pod's own node: gpubot node-status gpu-00"])
    text = render_text(Report("why-pending", {"kind": "Pod", "name": "p", "namespace": "ai"}, findings=[running]))
    verdict = " ".join(text.split("\n\n")[1].split())
    assert verdict.startswith("No problem found: ai/p is running on node gpu-00")
    assert "next: Read GPU load on the pod's own node" in verdict and "Root cause" not in text
    stale = Finding("SCHED_STALE_EVENT", "warning", "The scheduler's last word on ai/p is history", subject="pod/ai/p",
                    next_steps=["Ask again in a minute"])
    verdict = " ".join(render_text(Report("why-pending", {}, findings=[stale, running])).split("\n\n")[1].split())
    assert verdict.startswith("Root cause: The scheduler's last word") and "fix: Ask again in a minute" in verdict


def test_a_step_that_opens_with_fix_is_not_a_verdict_saying_fix_twice() -> None:
    bypass = Finding("VGPU_SCHEDULER_BYPASSED", "critical", "ai/p was handled by default-scheduler",
                     next_steps=["Fix: set spec.schedulerName: hami-scheduler in the pod template"], subject="pod/ai/p")
    text = render_text(Report("why-pending", {"kind": "Pod", "name": "p", "namespace": "ai"}, findings=[bypass]))
    verdict = " ".join(text.split("\n\n")[1].split())
    assert "fix: set spec.schedulerName: hami-scheduler in the pod template" in verdict
    assert "Fix: set spec.schedulerName" in text.split("\n\n", 2)[2], "the step itself keeps its words"
