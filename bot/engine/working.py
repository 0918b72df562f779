"""The "really working" verdict: is a card computing, judged by temperature, power and memory.

The field notes found GPU-Util a poor witness (a qGPU slice reads 20-26 %, a stalled job can read
anything), while temperature, power draw and memory in use move together when a card really
works. ``classify_card`` reads those three against the thresholds of the runbook's
``working_signals`` table; utilisation is shown as context only. Every reading may be missing
(nvidia-smi prints ``[N/A]``/``[Not Supported]``): a missing reading casts no vote, and a card
with no decisive vote is ``unknown``, never guessed.

This module is pure: readings and table rows in, verdicts out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

State = Literal["busy", "idle", "unknown"]
Vote = Literal["busy", "idle", "between", "n/a"]

#: the readings that vote, with how they read in evidence
SIGNALS: dict[str, str] = {"memory_used_mib": "MiB", "temperature_c": "°C", "power_w": "W"}


@dataclass(frozen=True)
class Threshold:
    """One ``working_signals`` row: ``<= idle_at_most`` votes idle, ``>= busy_at_least`` votes busy."""

    signal: str
    idle_at_most: float
    busy_at_least: float

    # the rule texts of the evidence line, worded once per row rather than once per card
    @cached_property
    def unit(self) -> str:
        return SIGNALS[self.signal]

    @cached_property
    def idle_rule(self) -> str:
        return f"idle ≤{_fmt(self.idle_at_most, self.unit)}"

    @cached_property
    def busy_rule(self) -> str:
        return f"busy ≥{_fmt(self.busy_at_least, self.unit)}"

    @cached_property
    def name(self) -> str:
        return self.signal.split("_")[0]


@dataclass(frozen=True)
class Profile:
    """One ``working_profiles`` row: typical readings of a known load (for "closest to" context)."""

    name: str
    values: dict[str, float]
    #: each signal's spread across the table the row was read with (``profiles_from`` fills it:
    #: every card of a fleet-wide node-status is compared with every row); where a signal has no
    #: entry it is worked out from the profiles passed to ``closest_profile``
    spreads: dict[str, float] = field(default_factory=dict)


@dataclass
class Verdict:
    """Whether one card is really working, with each reading's vote and a line of evidence, so the
    report shows why and a card without decisive readings stays unknown."""

    state: State
    votes: dict[str, Vote] = field(default_factory=dict)
    #: the field-notes profile the readings sit closest to, when any reading exists
    profile: str = ""
    #: one line of evidence: every reading, its vote and the profile
    text: str = ""


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if type(value) is float:
        return value if math.isfinite(value) else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def thresholds_from(rows: Sequence[Mapping[str, Any]]) -> list[Threshold]:
    """Valid rows of the ``working_signals`` table; a malformed row is ignored, not fatal."""
    out = []
    for row in rows:
        signal = str(row.get("signal", ""))
        idle, busy = _number(row.get("idle_at_most")), _number(row.get("busy_at_least"))
        if signal in SIGNALS and idle is not None and busy is not None and idle < busy:
            out.append(Threshold(signal, idle, busy))
    return out


def profiles_from(rows: Sequence[Mapping[str, Any]]) -> list[Profile]:
    """Rows of the ``working_profiles`` table with at least one numeric signal."""
    out = []
    for row in rows:
        values = {s: v for s in SIGNALS if (v := _number(row.get(s))) is not None}
        if row.get("profile") and values:
            out.append(Profile(str(row["profile"]), values))
    return [
        Profile(p.name, p.values, {signal: _spread(out, signal, ref) for signal, ref in p.values.items()})
        for p in out
    ]


def _spread(profiles: Sequence[Profile], signal: str, ref: float) -> float:
    """How far ``signal`` ranges across the profiles, a profile without it counted at ``ref``."""
    known = [q.values.get(signal, ref) for q in profiles]
    return max(known) - min(known)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "N/A"
    text = str(int(value)) if float(value).is_integer() else f"{value:.1f}"
    return f"{text}{'' if unit == '°C' else ' '}{unit}"


def closest_profile(readings: Mapping[str, float | None], profiles: Sequence[Profile]) -> str:
    """The profile nearest to the readings, each signal scaled by its spread across profiles."""
    best, best_distance = "", math.inf
    for p in profiles:
        total, count = 0.0, 0
        for signal, ref in p.values.items():
            value = readings.get(signal)
            if value is None:
                continue
            spread = p.spreads.get(signal)
            if spread is None:
                spread = _spread(profiles, signal, ref)
            total += abs(value - ref) / (spread or 1.0)
            count += 1
        if count and total / count < best_distance:
            best, best_distance = p.name, total / count
    return best


def classify_card(
    readings: Mapping[str, float | None],
    thresholds: Sequence[Threshold],
    profiles: Sequence[Profile] = (),
    *,
    utilization: float | None = None,
    processes: int = 0,
) -> Verdict:
    """Busy when more signals vote busy than idle, idle when more vote idle, else unknown."""
    votes: dict[str, Vote] = {}
    parts = []
    # readings from ``card_readings`` are numbers already: _number only for anything else
    clean = {k: v if type(v) is float and math.isfinite(v) else _number(v) for k, v in readings.items()}
    for t in thresholds:
        value = clean.get(t.signal)
        if value is None:
            votes[t.signal] = "n/a"
            parts.append(f"{t.name} N/A")
            continue
        if value <= t.idle_at_most:
            votes[t.signal] = "idle"
            rule = t.idle_rule
        elif value >= t.busy_at_least:
            votes[t.signal] = "busy"
            rule = t.busy_rule
        else:
            votes[t.signal] = "between"
            rule = "between idle and busy"
        parts.append(f"{_fmt(value, t.unit)} ({rule})")
    cast = list(votes.values())
    busy, idle = cast.count("busy"), cast.count("idle")
    state: State = "busy" if busy > idle else "idle" if idle > busy else "unknown"
    profile = closest_profile(clean, profiles)
    util_value = _number(utilization)
    util = "N/A" if util_value is None else _fmt(util_value, "%").replace(" ", "")
    text = ", ".join(parts) + f"; util {util} (context only); {processes} process(es)"
    if profile:
        text += f"; closest to: {profile}"
    return Verdict(state, votes, profile, text)


def card_readings(gpu: Any) -> dict[str, float | None]:
    """The voting readings of one ``GpuRow`` (or anything with the same attributes)."""
    return {s: _number(getattr(gpu, s, None)) for s in SIGNALS}


def card_label(gpu: Any) -> str:
    index = getattr(gpu, "index", None)
    return f"GPU{index}" if index is not None else f"GPU {getattr(gpu, 'uuid', '') or '?'}"
