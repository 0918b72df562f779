"""The "really working" verdict per node: temperature, power and memory, not utilisation alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.cards import EarlyCards, NodeVerdicts
from bot.engine.check import Check, Code, Outcome, node_subject
from bot.engine.facts import EARLY_CARD_VERDICTS, Facts
from bot.engine.per_node import PerNode
from bot.engine.working import card_label
from bot.probes.observation import NodeObservation
from bot.report import Skipped


class CardsWorking(TypedDict):
    node: str
    count: int
    what: str


GPU_BUSY = Code("GPU_BUSY", CardsWorking)
GPU_IDLE = Code("GPU_IDLE", CardsWorking)


def run(facts: Facts) -> Iterator[Outcome]:
    """GPU_BUSY / GPU_IDLE per node, one evidence line per card; undecided cards are noted as skipped."""
    observed = facts.observations
    early: EarlyCards = facts.beside(EARLY_CARD_VERDICTS) or {}
    for node, rows in facts.card_verdicts.items():
        done = early.get(node)
        if done is not None and done.verdicts is rows:  # the verdicts worked out as the node answered
            yield from _early_cards(facts, node, observed[node])
        else:
            yield from _outcomes(node, rows)


def _node_cards(facts: Facts, node: str, obs: NodeObservation) -> tuple[Outcome, ...]:
    """One node's outcomes from the verdicts worked out as it answered (``EarlyVerdicts``, the
    very ones ``card_verdicts`` takes for this reading)."""
    done = (facts.beside(EARLY_CARD_VERDICTS) or {}).get(node)
    if done is None or done.reading is not obs or done.verdicts is None:
        raise LookupError(f"no card verdicts worked out for {node} as it answered")
    return tuple(_outcomes(node, done.verdicts))


#: worked out early only where the runbook has the working tables (else no verdict is worked out
#: as the node answers, and every node's part would fail there)
_early_cards = PerNode(_node_cards, asked=lambda facts: bool(facts.table("working_signals")))


def _outcomes(node: str, rows: NodeVerdicts) -> Iterator[Outcome]:
    """Busy and idle cards, each state one finding; the undecided ones skipped."""
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
    per_node=(_early_cards,),
)
