"""The node-status picture: each card's state, and a PNG with one cell per card."""

from __future__ import annotations

import struct

from bot.node_picture import card_states, render_node_picture, totals
from bot.report import CardRow, Finding, NodeRow, Report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _card(i: int, verdict: str, pods: list[str] | None = None) -> CardRow:
    return CardRow(index=i, uuid=f"GPU-{i}", name="A100", verdict=verdict, pods=pods or [])


def _node(name: str, *cards: CardRow, ready: bool = True, ssh: str = "ok", gpus: int = 8) -> NodeRow:
    logical = {"nvidia.com/gpu": {"capacity": gpus, "allocatable": gpus, "requested": 0}}
    return NodeRow(node=name, ready=ready, cordoned=False, ssh=ssh, logical=logical, gpus=list(cards))


def test_every_card_gets_its_state() -> None:
    busy_free = _node("a", _card(0, "busy"), _card(1, "idle"), _card(2, "idle", ["ai/p"]), _card(3, "unknown"))
    assert card_states(busy_free) == ["busy", "free", "idle_allocated", "lost"]
    zombie = _node("z", _card(0, "idle"), _card(1, "busy"))
    finding = Finding("CHECKPOINT_ZOMBIE", "critical", "z", subject="node/z")
    assert card_states(zombie, [finding]) == ["idle_allocated", "busy"]  # idle cards of a leaking node
    assert card_states(zombie, [Finding("CHECKPOINT_ZOMBIE", "critical", "x", subject="node/other")])[0] == "free"
    assert card_states(_node("n", _card(0, "busy"), ready=False)) == ["lost"]
    assert card_states(_node("u", ssh="timeout", gpus=4)) == ["unreachable"] * 4  # cards from capacity
    qgpu = NodeRow(node="q", ready=True, cordoned=False, ssh="refused",
                   logical={"tke.cloud.tencent.com/qgpu-core": {"capacity": 200}})
    assert card_states(qgpu) == ["unreachable", "unreachable"]
    assert totals([["free", "busy"], ["busy"]]) == {
        "free": 1, "busy": 2, "idle_allocated": 0, "lost": 0, "unreachable": 0
    }


def test_the_picture_is_a_png_of_every_node() -> None:
    nodes = [_node(f"gpu-{i:03d}", *(_card(g, "busy" if (i + g) % 3 else "idle") for g in range(8)))
             for i in range(130)]
    nodes.append(_node("gone", ssh="timeout"))
    png = render_node_picture(Report(command="node-status", target={"nodes": []}, cluster="sim", nodes=nodes))
    assert png.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", png[16:24])
    assert width > 400 and height > 200
