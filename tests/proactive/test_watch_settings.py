"""The watch's trigger settings: their defaults, their YAML forms, and the values refused at start."""

from __future__ import annotations

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings

CLUSTERS = [{"name": "prod"}]


def _watch(**extra: object) -> dict[str, object]:
    return {"cluster": "prod", "channel": "C1", **extra}


def test_trigger_defaults_and_yaml_forms() -> None:
    (w,) = load_settings(env={}, clusters=CLUSTERS, watch=[_watch()]).watch
    assert (w.pending_after_s, w.pending_check_s, w.pending_max_diagnoses) == (300.0, 30.0, 20)
    assert (w.stream, w.stream_poll_s, w.stream_debounce_s) == (True, 2.0, 3.0)
    assert (w.quiet_hours, w.quiet_hours_timezone, w.routes) == ("", "UTC", ())
    assert "NODE_NOT_READY" in w.codes
    (w,) = load_settings(
        env={},
        clusters=CLUSTERS,
        watch=[_watch(pending_after_s="60", stream="false", pending_max_diagnoses=5, quiet_hours="01:00-02:00")],
    ).watch
    assert (w.pending_after_s, w.stream, w.pending_max_diagnoses, w.quiet_hours) == (60.0, False, 5, "01:00-02:00")


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"pending_after_s": -1}, "pending_after_s: must not be negative"),
        ({"pending_check_s": 0}, "pending_check_s: must be positive"),
        ({"pending_max_diagnoses": 0}, "pending_max_diagnoses: must be positive"),
        ({"stream_poll_s": 0}, "stream_poll_s: must be positive"),
        ({"stream_debounce_s": -0.5}, "stream_debounce_s: must not be negative"),
        ({"pending_after_s": "soon"}, "pending_after_s: expected a number"),
    ],
)
def test_bad_trigger_values_are_refused(extra: dict[str, object], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        load_settings(env={}, clusters=CLUSTERS, watch=[_watch(**extra)])
