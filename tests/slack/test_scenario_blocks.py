"""Block Kit for every bundled scenario: within Slack's limits, one button per distinct fix.

Every ``expect`` run of every scenario is diagnosed on a fresh simulator and rendered as Slack
would post it (the report with a button for every fix, then the evidence messages). Each message
must pass every limit check, no two buttons may offer the same (action, params), and the
zombie-checkpoint report must fit in 15 blocks.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from bot.commands import parse_invocation
from bot.oneshot import run_invocation
from bot.settings import load_settings
from bot.sim.scenario import load_scenario
from bot.slack import blocks as B
from bot.slack.hooks import OfferButton
from bot.views.groups import distinct_fixes
from tests.slack.test_blocks import assert_distinct_buttons, assert_within_limits

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
CASES = [
    pytest.param(path, exp.run, id=f"{path.stem}:{exp.run.split()[0]}:{i}")
    for path in SCENARIOS
    for i, exp in enumerate(load_scenario(path).expect)
]


def _fixes_of(blocks: list[dict[str, Any]], by_offer: dict[str, tuple[str, tuple[tuple[str, str], ...]]]) -> list[Any]:
    elements = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    return [by_offer[o["value"]] for e in elements for o in e.get("options") or [e]]


@pytest.mark.parametrize(("path", "run"), CASES)
async def test_every_scenario_renders_within_slack_limits(path: Path, run: str, tmp_path: Path) -> None:
    inv = parse_invocation(shlex.split(run), surface="slack")
    report = await run_invocation(inv, load_settings(env={}, state_path=str(tmp_path / "s.db")), scenario=str(path))
    fixes = distinct_fixes(report.findings)
    offers = {fix.key: OfferButton(f"offer-{n}", "hazard") for n, fix in enumerate(fixes)}
    by_offer = {button.offer_id: key for key, button in offers.items()}
    rendered = B.render_report(report, offers=offers)
    assert_within_limits(rendered)
    assert_distinct_buttons(rendered.blocks)
    shown = _fixes_of(rendered.blocks, by_offer)
    assert len(shown) == len(set(shown)), "two buttons offer the same (action, params)"
    offered_pairs = {(r.action, tuple(sorted(r.params.items()))) for f in report.findings for r in f.remediations}
    assert set(shown) <= offered_pairs
    if not rendered.truncated:  # every distinct fix the report offers has its button
        assert set(shown) == offered_pairs
    for page in B.render_details(report):
        assert_within_limits(page)
    if path.stem == "zombie-checkpoint" and inv.command == "why-pending":
        assert len(rendered.blocks) <= 15
        assert report.codes().count("CHECKPOINT_ZOMBIE") == 2
        assert sum("`CHECKPOINT_ZOMBIE`" in str(b) for b in rendered.blocks) == 1
        _reads_like_an_expert(rendered)


def _reads_like_an_expert(rendered: B.Rendered) -> None:
    """The zombie report: one picker per action (two nodes share each) in the catalogue's words,
    the verdict's fix the first fix listed, the leak and the allocation failure folded under the
    cause, and the counts saying so."""
    verdict = next(b["text"]["text"] for b in rendered.blocks if b.get("block_id") == "verdict")
    assert "*Fix first:* Restart qgpu-manager on tcs-10-29-25-5, tcs-10-29-25-6" in verdict
    assert "_1 cause, 2 consequences_" in verdict
    cause = next(b["text"]["text"] for b in rendered.blocks if b.get("block_id") == "finding-0")
    assert "*Fix, least invasive first*\n1. Restart qgpu-manager on tcs-10-29-25-5, tcs-10-29-25-6" in cause
    assert "*Explained by this cause*" in cause
    assert "`LEAK_LOGICAL_NOT_PHYSICAL`" in cause and "`SCHED_QGPU_ALLOC_FAILED`" in cause
    assert not [b for b in rendered.blocks if str(b.get("block_id", "")).startswith("finding-") and b is not None
                and b.get("block_id") != "finding-0"]  # the consequences are no sections of their own
    rows = [b["elements"] for b in rendered.blocks if b["type"] == "actions"]
    assert [[e["type"] for e in row] for row in rows] == [["static_select"]] * 3
    assert [row[0]["placeholder"]["text"] for row in rows] == [
        "Restart qgpu-manager on… (2 nodes)",
        "Restart kubelet on… (2 nodes)",
        "Clear the device-plugin checkpoint on… (2 nodes)",
    ]
    assert [o["text"]["text"] for o in rows[0][0]["options"]] == [
        "Restart qgpu-manager · tcs-10-29-25-5",
        "Restart qgpu-manager · tcs-10-29-25-6",
    ]


def test_there_are_scenarios() -> None:
    assert len(CASES) >= 10
