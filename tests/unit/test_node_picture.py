"""The node-status picture: each card's state, and a PNG with one bordered cell per card."""

from __future__ import annotations

import struct

from bot.report import CardRow, Finding, NodeRow, Report
from bot.views.card_state import node_card_states, totals
from bot.views.node_picture import layout, render_node_picture, summary_line

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _card(i: int, verdict: str, pods: list[str] | None = None, procs: int = 0,
          gone: list[str] | None = None) -> CardRow:
    return CardRow(index=i, uuid=f"GPU-{i}", name="A100", verdict=verdict, pods=pods or [], processes=procs,
                   gone_holders=gone or [])


def _node(name: str, *cards: CardRow, ready: bool = True, ssh: str = "ok", gpus: int = 8,
          requested: float = 0) -> NodeRow:
    logical = {"nvidia.com/gpu": {"capacity": gpus, "allocatable": gpus, "requested": requested}}
    return NodeRow(node=name, ready=ready, cordoned=False, ssh=ssh, logical=logical, gpus=list(cards))


def test_every_card_gets_its_state() -> None:
    mixed = _node("a", _card(0, "busy", ["ai/p"]), _card(1, "idle"), _card(2, "idle", ["ai/q"]), _card(3, "unknown"),
                  _card(4, "idle", gone=["uid-1"]), requested=2)
    assert node_card_states(mixed) == ["busy", "free", "allocated_idle", "lost", "leaked"]
    # computing while nothing on the node asks for a GPU: a leak (physical, not logical)
    assert node_card_states(_node("p", _card(0, "busy", procs=1))) == ["leaked"]
    # a checkpoint holding devices of a gone pod that name no card: the node's idle, unheld cards
    zombie = _node("z", _card(0, "idle"), _card(1, "busy", ["ai/r"]), requested=1)
    zombie.gone_holders = ["uid-2"]
    assert node_card_states(zombie) == ["leaked", "busy"]
    assert node_card_states(_node("n", _card(0, "busy"), ready=False)) == ["lost"]
    assert node_card_states(_node("u", ssh="timeout", gpus=4)) == ["unreadable"] * 4  # cards from capacity
    qgpu = NodeRow(node="q", ready=True, cordoned=False, ssh="refused",
                   logical={"tke.cloud.tencent.com/qgpu-core": {"capacity": 200}})
    assert node_card_states(qgpu) == ["unreadable", "unreadable"]
    assert totals([["free", "busy"], ["busy"]]) == {
        "free": 1, "busy": 2, "allocated_idle": 0, "leaked": 0, "lost": 0, "unreadable": 0
    }


def test_a_finding_about_a_node_does_not_repaint_its_cards() -> None:
    """Issue 31.6: the picture said "allocated, idle (leaked?)" for cards the text called idle."""
    row = _node("z", _card(0, "idle"), _card(1, "idle"))
    report = Report(command="node-status", target={"nodes": []}, nodes=[row],
                    findings=[Finding("CHECKPOINT_ZOMBIE", "critical", "z", subject="node/z")])
    assert node_card_states(report.nodes[0]) == ["free", "free"]
    assert summary_line(report, totals([node_card_states(row)])) == "cluster: 1 GPU nodes, 2 cards: 2 free, 0 busy"


def test_the_layout_stays_readable_from_ten_to_a_thousand_nodes() -> None:
    small, mid, big = layout(10, 8, 12), layout(100, 8, 12), layout(1000, 8, 12)
    assert small.columns == 1 and small.indices and small.cell > mid.cell > big.cell
    assert mid.indices and not big.indices
    for lay in (mid, big):
        width, height = lay.columns * lay.column_w, lay.rows * lay.row_h
        assert 0.8 < width / height < 3.2, (lay, width, height)


def test_the_picture_is_a_png_of_every_node() -> None:
    nodes = [_node(f"gpu-{i:03d}", *(_card(g, "busy" if (i + g) % 3 else "idle") for g in range(8)))
             for i in range(130)]
    nodes.append(_node("gone", ssh="timeout"))
    png = render_node_picture(Report(command="node-status", target={"nodes": []}, cluster="sim", nodes=nodes))
    assert png.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", png[16:24])
    assert width > 400 and height > 200


def test_idle_cards_the_api_counts_as_requested_are_not_free() -> None:
    """Eight whole cards requested by a pod no placement ties to a card (a Terminating pod whose
    checkpoint entry was not read): none is free; two of eight: six are; shared or MIG counts are
    not cards, so nothing changes there."""
    idle = [_card(i, "idle") for i in range(8)]
    assert node_card_states(_node("t", *idle, requested=8)) == ["allocated_idle"] * 8
    assert node_card_states(_node("t", *idle, requested=2)) == ["free"] * 6 + ["allocated_idle"] * 2
    placed = [_card(0, "idle", ["ai/p"]), *idle[1:]]
    assert node_card_states(_node("t", *placed, requested=1)) == ["allocated_idle"] + ["free"] * 7
    assert node_card_states(_node("s", *idle, gpus=32, requested=32)) == ["free"] * 8  # 4 replicas a card
