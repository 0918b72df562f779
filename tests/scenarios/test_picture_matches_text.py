"""Issue 31.6: the node-status picture shows the states the text table prints, card for card.

Every bundled scenario runs node-status on a fresh simulator (API over HTTP, nodes over SSH); the
card states printed in the text (``-> idle: free``, ``2 card(s): unreadable``) are counted and
must equal the picture's per-state counts (its legend), and the PNG must render (a scenario
without GPU nodes: no card in the text, and the picture refuses in words).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest

from bot.commands import Invocation
from bot.console.render_text import render_text
from bot.errors import UsageError
from bot.oneshot import run_invocation
from bot.settings import load_settings
from bot.views.card_state import STATES, totals
from bot.views.node_picture import picture_states, render_node_picture

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
LABELS = {label: state for state, (label, _) in STATES.items()}
CARD = re.compile(r"^    GPU\S*  .* -> \S+: (?P<label>[^\[]+?)(  \[|$)")
UNREAD = re.compile(r"^    (?P<n>\d+) card\(s\): (?P<label>.+) \(count from the API's capacity\)$")


def text_states(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if (m := CARD.match(line)) is not None:
            counts[LABELS[m["label"]]] += 1
        elif (m := UNREAD.match(line)) is not None:
            counts[LABELS[m["label"]]] += int(m["n"])
    return counts


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_the_picture_counts_what_the_text_prints(scenario: Path) -> None:
    report = asyncio.run(run_invocation(Invocation(command="node-status"), load_settings(), scenario=str(scenario)))
    drawn = {state: n for state, n in totals(picture_states(report)).items() if n}
    assert dict(text_states(render_text(report))) == drawn
    if not report.nodes:
        # nothing to draw is said in words (the Slack command answers it), not as an empty image
        with pytest.raises(UsageError, match="no GPU nodes to draw"):
            render_node_picture(report)
        return
    assert render_node_picture(report).startswith(b"\x89PNG")


def test_the_zombie_cards_read_the_same_in_both() -> None:
    """The issue's case: four idle cards held by a zombie checkpoint, 0 requested: leaked in both."""
    scenario = ROOT / "scenarios" / "zombie-checkpoint.yaml"
    report = asyncio.run(run_invocation(Invocation(command="node-status"), load_settings(), scenario=str(scenario)))
    assert text_states(render_text(report)) == Counter({"leaked": 4})
    assert totals(picture_states(report))["leaked"] == 4
