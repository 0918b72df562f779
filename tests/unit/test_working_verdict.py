"""The "really working" verdict: thresholds from the shipped runbook, readings that may be [N/A]."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bot.commands import parse_invocation
from bot.engine.cards import EarlyVerdicts, card_verdicts
from bot.engine.facts import EARLY_CARD_VERDICTS, Facts
from bot.engine.runbooks import load_runbooks
from bot.engine.working import (
    SIGNALS,
    Threshold,
    card_readings,
    classify_card,
    profiles_from,
    thresholds_from,
)
from bot.probes.node import NodeObservation
from bot.probes.nvidia_smi import GPU_FIELDS, UNAVAILABLE, ProcRow, parse_gpu_query


@pytest.fixture(scope="module")
def tables() -> dict[str, list[dict[str, object]]]:
    return load_runbooks().diagnosis("node-status").tables


@pytest.fixture(scope="module")
def thresholds(tables: dict[str, list[dict[str, object]]]) -> list[Threshold]:
    found = thresholds_from(tables["working_signals"])
    assert {t.signal for t in found} == set(SIGNALS)
    return found


def readings(mem: float | None, temp: float | None, power: float | None) -> dict[str, float | None]:
    return {"memory_used_mib": mem, "temperature_c": temp, "power_w": power}


# the field notes' table (V100): idle, a qGPU 20% slice running matmul, full-card training
FIELD_NOTES = [
    ("idle", readings(0, 33, 30), 0, "idle", "idle"),
    ("slice", readings(1536, 48, 85), 23, "busy", "qGPU 20% slice running matrix products"),
    ("training", readings(20480, 72, 275), 97, "busy", "full-card training"),
]


@pytest.mark.parametrize(
    ("label", "values", "util", "state", "profile"), FIELD_NOTES, ids=[r[0] for r in FIELD_NOTES]
)
def test_field_notes_rows(tables, thresholds, label, values, util, state, profile) -> None:
    verdict = classify_card(values, thresholds, profiles_from(tables["working_profiles"]), utilization=util)
    assert verdict.state == state
    assert verdict.profile == profile
    assert "context only" in verdict.text


def test_utilisation_never_decides(thresholds) -> None:
    # a card reading 99% with idle physics is idle; 0% with busy physics is busy
    assert classify_card(readings(0, 33, 30), thresholds, utilization=99).state == "idle"
    assert classify_card(readings(4096, 60, 150), thresholds, utilization=0).state == "busy"


def test_missing_readings_do_not_vote(thresholds) -> None:
    only_memory = classify_card(readings(8000, None, None), thresholds)
    assert only_memory.state == "busy"
    assert only_memory.votes == {"memory_used_mib": "busy", "temperature_c": "n/a", "power_w": "n/a"}
    assert "N/A" in only_memory.text
    assert classify_card(readings(None, None, None), thresholds).state == "unknown"


def test_a_tie_or_in_between_readings_give_no_verdict(thresholds) -> None:
    assert classify_card(readings(None, 60, 30), thresholds).state == "unknown"  # hot but not drawing power
    assert classify_card(readings(300, 42, 55), thresholds).state == "unknown"  # every reading in between


def test_malformed_table_rows_are_ignored() -> None:
    rows = [
        {"signal": "power_w", "idle_at_most": 50, "busy_at_least": 60},
        {"signal": "power_w", "idle_at_most": "lots", "busy_at_least": 60},
        {"signal": "fan_speed", "idle_at_most": 10, "busy_at_least": 20},
        {"signal": "temperature_c", "idle_at_most": 50, "busy_at_least": 40},  # inverted
        {},
    ]
    assert thresholds_from(rows) == [Threshold("power_w", 50, 60)]
    assert profiles_from([{"profile": "x"}, {"power_w": 3}, {"profile": "y", "power_w": "7"}])[0].name == "y"


reading = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10**6, max_value=10**6),
    st.text(max_size=8),
)


@given(mem=reading, temp=reading, power=reading, util=reading, procs=st.integers(0, 64))
@example(mem=None, temp=None, power=None, util="0.", procs=0)  # text that parses as a whole number
def test_any_reading_never_crashes(tables, thresholds, mem, temp, power, util, procs) -> None:
    verdict = classify_card(
        {"memory_used_mib": mem, "temperature_c": temp, "power_w": power},
        thresholds,
        profiles_from(tables["working_profiles"]),
        utilization=util,
        processes=procs,
    )
    assert verdict.state in ("busy", "idle", "unknown")
    assert set(verdict.votes) == set(SIGNALS)


@given(
    mem=st.floats(min_value=512, max_value=10**6),
    temp=st.floats(min_value=44, max_value=120),
    power=st.floats(min_value=60, max_value=1000),
)
def test_all_busy_readings_are_busy(thresholds, mem, temp, power) -> None:
    assert classify_card(readings(mem, temp, power), thresholds).state == "busy"


MARKERS = sorted(m for m in UNAVAILABLE if m) + ["[GPU requires reset]"]


@given(st.lists(st.one_of(st.sampled_from(MARKERS), st.sampled_from(["0", "33", "30.12", "1630"])),
                min_size=len(GPU_FIELDS), max_size=len(GPU_FIELDS)))
def test_any_nvidia_smi_field_may_be_unavailable(thresholds, cells) -> None:
    """A GPU line where any field reads [N/A], [Not Supported], ... parses and classifies."""
    line = ", ".join(cells)
    rows = parse_gpu_query(line, problems=[])
    for row in rows:
        values = card_readings(row)
        assert all(v is None or math.isfinite(v) for v in values.values())
        verdict = classify_card(values, thresholds, utilization=row.utilization_gpu)
        assert verdict.state in ("busy", "idle", "unknown")


def test_verdicts_worked_out_during_the_fan_out_are_the_ones_worked_out_after_it(tables) -> None:
    def reading(node: str, used: int) -> NodeObservation:
        csv = "\n".join(f"{i}, GPU-{node}-{i}, NVIDIA A100, 50, {used * i}, 81920, {30 + 10 * i}, {60 * (i + 1)}"
                        for i in range(4))
        obs = NodeObservation(node=node, gpus=parse_gpu_query(csv))
        obs.processes = [ProcRow(1, "python", 1024.0, f"GPU-{node}-3")]
        return obs

    readings_now = {"a": reading("a", 9000), "b": reading("b", 0), "c": reading("c", 4000)}
    facts = Facts(parse_invocation(["node-status"]), tables=tables)
    fan_out = EarlyVerdicts(facts.table("working_signals"), facts.table("working_profiles"))
    fan_out.answered("a", readings_now["a"])
    fan_out.answered("b", reading("b", 0))  # a reading that is not the one the report keeps
    facts.put("node_readings", readings_now)  # what the node-readings loader puts, the verdicts beside
    facts.put(EARLY_CARD_VERDICTS, fan_out.done)
    early = facts.card_verdicts
    late = card_verdicts(readings_now, tables["working_signals"], tables["working_profiles"])
    assert early["a"] is fan_out.done["a"].verdicts  # worked out once, during the fan-out
    assert early["b"] is not fan_out.done["b"].verdicts  # not of the kept reading: worked out again
    assert {n: [(g.uuid, v) for g, v in rows] for n, rows in early.items()} == {
        n: [(g.uuid, v) for g, v in rows] for n, rows in late.items()
    }
    assert [v.state for _, v in early["a"]] == ["idle", "busy", "busy", "busy"]
