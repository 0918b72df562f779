"""The "really working" verdict per node: temperature, power and memory, not utilisation alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Outcome, node_subject
from bot.engine.facts import Facts
from bot.engine.working import card_label
from bot.report import Skipped


class CardsWorking(TypedDict):
    node: str
    count: int
    what: str


GPU_BUSY = Code("GPU_BUSY", CardsWorking)
GPU_IDLE = Code("GPU_IDLE", CardsWorking)


def run(facts: Facts) -> Iterator[Outcome]:
    """GPU_BUSY / GPU_IDLE per node, one evidence line per card; undecided cards are noted as skipped."""
    for node, rows in facts.card_verdicts.items():
        for state, code in (("busy", GPU_BUSY), ("idle", GPU_IDLE)):
            cards = [(g, v) for g, v in rows if v.state == state]
            if cards:
                labels = ", ".join(card_label(g) for g, _ in cards)
                yield code.detect(
                    node_subject(node),
                    {
                        "node": node,
                        "count": len(cards),
                        "what": f"{labels} of {len(rows)} card(s)",
                    },
                    evidence=[f"{node} {card_label(g)} {state}: {v.text}" for g, v in cards],
                )
        unknown = [g for g, v in rows if v.state == "unknown"]
        if unknown:
            yield Skipped(
                f"working verdict for {node} " + ", ".join(card_label(g) for g in unknown),
                "temperature, power and memory do not decide (unreadable or between thresholds)",
            )


CHECK = Check(
    name="card.working",
    reads=("card_verdicts",),
    emits=(GPU_BUSY, GPU_IDLE),
    run=run,
    tables=("working_signals", "working_profiles"),
)
