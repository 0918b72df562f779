"""Replacing one offer's button by a status line leaves the report and the other offers alone."""

from __future__ import annotations

import copy
import json

from bot.report import Finding, Remediation, Report
from bot.slack.blocks import render_report
from bot.slack.hooks import OfferButton
from bot.slack.limits import MAX_BLOCKS
from bot.slack.offer_messages import STATUS_PREFIX, offer_ids_in, replace_offer
from bot.views.groups import fix_key


def _report(n_rems: int = 3) -> Report:
    report = Report(command="why-pending", target={"kind": "Pod", "name": "p", "namespace": "ai"}, cluster="sim")
    rems = [Remediation("kubelet.restart", {"node": f"n{k}"}, "restart") for k in range(n_rems)]
    report.add(Finding("CHECKPOINT_ZOMBIE", "critical", "zombie", evidence=["x"], remediations=rems))
    return report


def _blocks(n_rems: int = 3) -> list[dict]:
    offers = {fix_key("kubelet.restart", {"node": f"n{j}"}): OfferButton(f"offer-{j}") for j in range(n_rems)}
    return render_report(_report(n_rems), offers=offers).blocks


def _buttons(blocks: list[dict]) -> list[str]:
    return offer_ids_in(blocks)


def test_one_button_becomes_a_line_and_the_others_stay() -> None:
    blocks = _blocks()
    before = copy.deepcopy(blocks)
    edited = replace_offer(blocks, "offer-1", "approved by <@U0BOB>, running")
    assert blocks == before, "the input is never mutated"
    assert edited is not None
    assert _buttons(edited) == ["offer-0", "offer-2"]
    at = next(i for i, b in enumerate(edited) if b["type"] == "actions")
    line = edited[at + 1]
    assert line["type"] == "context" and line["block_id"] == STATUS_PREFIX + "offer-1"
    assert line["elements"][0]["text"] == "approved by <@U0BOB>, running"
    # everything but the actions block and the new line is unchanged
    rest = [b for b in edited if b["type"] != "actions" and b is not line]
    assert rest == [b for b in before if b["type"] != "actions"]


def test_the_outcome_rewrites_the_same_line() -> None:
    running = replace_offer(_blocks(), "offer-1", "STATUS-RUNNING")
    assert running is not None
    done = replace_offer(running, "offer-1", "STATUS-DONE")
    assert done is not None and len(done) == len(running)
    assert "STATUS-RUNNING" not in json.dumps(done) and "STATUS-DONE" in json.dumps(done)


def test_last_button_gives_way_to_its_line_and_lines_keep_order() -> None:
    blocks = _blocks(2)
    for offer in ("offer-0", "offer-1"):
        edited = replace_offer(blocks, offer, f"done {offer}")
        assert edited is not None
        blocks = edited
    assert _buttons(blocks) == []
    assert not [b for b in blocks if b["type"] == "actions"]
    lines = [b["block_id"] for b in blocks if b.get("block_id", "").startswith(STATUS_PREFIX)]
    assert lines == [STATUS_PREFIX + "offer-0", STATUS_PREFIX + "offer-1"]


def test_unknown_offer_is_none() -> None:
    assert replace_offer(_blocks(), "offer-9", "x") is None
    assert replace_offer([], "offer-0", "x") is None


def test_a_full_message_stays_within_the_block_limit() -> None:
    blocks = _blocks(3)
    filler = [{"type": "divider"}] * (MAX_BLOCKS - len(blocks))
    full = blocks + filler
    edited = replace_offer(full, "offer-0", "running")
    assert edited is not None and len(edited) == MAX_BLOCKS
    assert STATUS_PREFIX + "offer-0" in json.dumps(edited)


def test_long_text_is_clipped_to_slack_limits() -> None:
    edited = replace_offer(_blocks(), "offer-0", "x" * 5000)
    assert edited is not None
    line = next(b for b in edited if b.get("block_id") == STATUS_PREFIX + "offer-0")
    assert len(line["elements"][0]["text"]) <= 3000


def test_a_picked_target_leaves_the_node_picker_with_the_others() -> None:
    """One action on three nodes is one menu; the option picked becomes a line, the menu keeps the
    other two targets, and the last pick takes the menu away."""
    blocks = _blocks()
    pickers = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert [p["type"] for p in pickers] == ["static_select"]
    assert pickers[0]["placeholder"]["text"] == "Restart kubelet on… (3 nodes)"
    assert [o["text"]["text"] for o in pickers[0]["options"]] == [f"Restart kubelet · n{k}" for k in range(3)]
    edited = replace_offer(blocks, "offer-0", "running")
    assert edited is not None and _buttons(edited) == ["offer-1", "offer-2"]
    for offer in ("offer-1", "offer-2"):
        edited = replace_offer(edited, offer, "done")
        assert edited is not None
    assert not [b for b in edited if b["type"] == "actions"]
    assert [b["block_id"] for b in edited if b.get("block_id", "").startswith(STATUS_PREFIX)] == [
        STATUS_PREFIX + f"offer-{k}" for k in range(3)
    ]
