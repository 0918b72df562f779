"""A cause found on many nodes reads as one cause: its next steps that differ only by the node
are one step naming the nodes, not a line per node (a wall a person scrolls past)."""

from __future__ import annotations

from bot.report import Finding
from bot.views.groups import STEP_NAMES_SHOWN, group_findings


def zombie(node: str) -> Finding:
    return Finding(code="CHECKPOINT_ZOMBIE", severity="critical", title=f"checkpoint on {node}",
                   subject=f"node/{node}",
                   next_steps=["Confirm each UID is gone: kubectl get pods -A | grep UID",
                               f"If that fails, restart kubelet on {node}: it rebuilds the checkpoint.",
                               f"Then read journalctl -u kubelet on {node}."])


def steps(*nodes: str) -> list[str]:
    [group] = group_findings([zombie(n) for n in nodes])
    return group.next_steps


def test_steps_that_differ_only_by_the_node_are_one_step_naming_the_nodes() -> None:
    assert steps("gpu-1", "gpu-10", "gpu-2") == [
        "Confirm each UID is gone: kubectl get pods -A | grep UID",
        "If that fails, restart kubelet on gpu-1, gpu-10, gpu-2: it rebuilds the checkpoint.",
        "Then read journalctl -u kubelet on gpu-1, gpu-10, gpu-2.",
    ]


def test_a_name_inside_a_longer_name_is_not_a_hole() -> None:
    """gpu-1's step must not be read as gpu-10's with a hole in it."""
    one = Finding(code="X", severity="warning", title="t", subject="node/gpu-1",
                  next_steps=["look at gpu-10 and gpu-1.example (not gpu-1)"])
    [group] = group_findings([one])
    assert group.next_steps == ["look at gpu-10 and gpu-1.example (not gpu-1)"]


def test_many_nodes_are_named_up_to_a_bound() -> None:
    nodes = [f"gpu-{i:03d}" for i in range(STEP_NAMES_SHOWN + 5)]
    merged = steps(*nodes)[1]
    assert merged.startswith(f"If that fails, restart kubelet on {', '.join(nodes[:STEP_NAMES_SHOWN])} and 5 more:")


def test_one_node_reads_as_before() -> None:
    assert steps("gpu-7")[1] == "If that fails, restart kubelet on gpu-7: it rebuilds the checkpoint."


def test_an_explanation_that_names_the_leads_own_pods_says_whose_it_is() -> None:
    a, b = zombie("gpu-1"), zombie("gpu-2")
    a.explanation, b.explanation = "Entries for pods u-1, u-2 still hold 4 devices.", "Entries for u-3 hold 2."
    [group] = group_findings([a, b])
    assert group.explanation == "On gpu-1 (and alike on 1 more): Entries for pods u-1, u-2 still hold 4 devices."
    a.explanation = b.explanation = "The same words on every node."
    [group] = group_findings([a, b])
    assert group.explanation == "The same words on every node."
