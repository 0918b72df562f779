"""The terminal text: one entry per cause, and each action offered once however many nodes share it."""

from __future__ import annotations

from bot.render_text import MAX_TARGETS_LISTED, render_text
from bot.report import Finding, Remediation, Report


def _zombie(node: str) -> Finding:
    return Finding(
        code="CHECKPOINT_ZOMBIE",
        severity="critical",
        title=f"The kubelet checkpoint on {node} holds devices of pods that no longer exist",
        subject=f"node/{node}",
        remediations=[
            Remediation("qgpu.restart-manager", {"node": node}, f"Restart the qgpu-manager pod on {node}"),
            Remediation("kubelet.restart", {"node": node}, f"Cordon {node}, restart kubelet, uncordon"),
        ],
    )


def _offers(text: str) -> list[str]:
    lines = text.splitlines()
    return [ln.strip() for i, ln in enumerate(lines) if "=> offer" in ln or "the same for" in ln]


def test_an_action_on_many_nodes_is_one_offer_and_one_line_of_other_targets() -> None:
    nodes = [f"gpu-{i:02d}" for i in range(30)]
    text = render_text(Report("node-status", {}, findings=[_zombie(n) for n in nodes]))
    offers = _offers(text)
    assert [ln.split(":")[0] for ln in offers if ln.startswith("=>")] == [
        "=> offer qgpu.restart-manager node=gpu-00",
        "=> offer kubelet.restart node=gpu-00",
    ]
    same = [ln for ln in offers if ln.startswith("the same for")]
    assert len(same) == 2  # one per action (a line of text may wrap, the list is one entry)
    joined = " ".join(text.split())
    listed = ", ".join(f"node={n}" for n in nodes[1 : 1 + MAX_TARGETS_LISTED])
    assert f"the same for {listed} and {30 - 1 - MAX_TARGETS_LISTED} more" in joined
    # least invasive first: the manager restart before the kubelet restart
    assert joined.index("qgpu.restart-manager node=gpu-00") < joined.index("kubelet.restart node=gpu-00")


def test_one_node_has_no_same_for_line() -> None:
    text = render_text(Report("node-status", {}, findings=[_zombie("gpu-00")]))
    assert _offers(text) == [
        "=> offer qgpu.restart-manager node=gpu-00: Restart the qgpu-manager pod on gpu-00",
        "=> offer kubelet.restart node=gpu-00: Cordon gpu-00, restart kubelet, uncordon",
    ]
