"""The FailedScheduling parser against every message shape in REFERENCE.md, the field notes and
the scenarios, plus property tests that no text can crash it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.engine import facts as facts_module
from bot.kube.scheduling import (
    CATEGORIES,
    ParsedSchedulingMessage,
    QgpuAllocFailure,
    decode_qgpu,
    failed_scheduling_events,
    is_scheduler_event,
    parse_event_messages,
    parse_scheduling_message,
)
from bot.sim.scenario import load_scenario
from tests import yaml_data

ROOT = Path(__file__).resolve().parents[2]
CASES: list[dict[str, Any]] = yaml_data.load_file(ROOT / "tests/data/scheduling_messages.yaml")


def _reason_tuple(reason: Any) -> list[Any]:
    extra = reason.resource
    if reason.taint is not None:
        extra = f"{reason.taint.key}={reason.taint.value}"
    return [reason.count, reason.category, extra]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_messages(case: dict[str, Any]) -> None:
    parsed = parse_scheduling_message(case["message"])
    assert parsed.raw == case["message"]
    assert parsed.total_nodes == case["total"]
    assert [_reason_tuple(r) for r in parsed.reasons] == case["reasons"]
    assert parsed.preemption == case.get("preemption")
    assert parsed.prefilter == case.get("prefilter")
    assert parsed.prefilter_category == case.get("prefilter_category")
    assert parsed.recognised is not case.get("unrecognised_whole", False)
    if "qgpu_used_core" in case:
        decoded = [r.qgpu for r in parsed.reasons if r.category == "qgpu_alloc_failed"]
        assert [[c.used_core for c in q.cards] for q in decoded if q] == case["qgpu_used_core"]


def test_every_category_is_declared() -> None:
    for case in CASES:
        for reason in parse_scheduling_message(case["message"]).reasons:
            assert reason.category in CATEGORIES


def _scenario_events() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        # Through the loader, so objects a scenario inherits from its base: count too.
        for obj in load_scenario(path).objects:
            # Karpenter records its own FailedScheduling; bot.kube.autoscaler reads those.
            if obj.get("kind") == "Event" and is_scheduler_event(obj):
                found.append((path.name, obj))
    return found


SCENARIO_EVENTS = _scenario_events()


def test_scenarios_have_failed_scheduling_events() -> None:
    # The example scenarios are the parser's integration fixtures; losing them silently would
    # leave the loop below testing nothing.
    assert len(SCENARIO_EVENTS) >= 2


@pytest.mark.parametrize("name,event", SCENARIO_EVENTS, ids=[n for n, _ in SCENARIO_EVENTS])
def test_scenario_messages_parse_fully(name: str, event: dict[str, Any]) -> None:
    parsed = parse_scheduling_message(event["message"])
    assert parsed.total_nodes is not None and parsed.total_nodes > 0
    if parsed.prefilter and not parsed.reasons:
        # A PreFilter message replaces the histogram; it must still be recognised.
        assert parsed.prefilter_category not in (None, "unrecognised"), parsed
        return
    assert parsed.reasons, name
    assert all(r.category != "unrecognised" for r in parsed.reasons), parsed.reasons
    # A node that fails for two reasons (Insufficient cpu and Insufficient memory, or HAMi's
    # gpumem and gpucores) is counted under each, so the histogram sums to at least N.
    assert sum(r.count for r in parsed.reasons) >= parsed.total_nodes


def test_untolerated_taint_scenario_names_both_taints() -> None:
    event = next(e for n, e in SCENARIO_EVENTS if n == "untolerated-taint.yaml")
    parsed = parse_scheduling_message(event["message"])
    taints = {(r.taint.key, r.taint.value, r.count) for r in parsed.reasons if r.taint}
    assert taints == {("node-role.kubernetes.io/control-plane", "", 1), ("nvidia.com/gpu", "true", 2)}
    assert parsed.preemption == "0/3 nodes are available: 3 Preemption is not helpful for scheduling"
    tail = parsed.preemption_parsed()
    assert tail is not None and tail.total_nodes == 3 and tail.reasons[0].count == 3


def test_qgpu_describe_words() -> None:
    failure = decode_qgpu("failed to allocate (100, 0, 1) on (80, 11, 16)(90, 11, 16)")
    assert failure is not None
    assert (failure.requested_core, failure.requested_memory, failure.requested_cards) == (100, 0, 1)
    assert [(c.used_core, c.second, c.third, c.free_core) for c in failure.cards] == [
        (80, 11, 16, 20),
        (90, 11, 16, 10),
    ]
    assert failure.describe() == (
        "asks 100% core, 0 GiB memory on 1 card; "
        "card 0: 80% core used (20% free) — fields 2-3 raw: 11, 16; "
        "card 1: 90% core used (10% free) — fields 2-3 raw: 11, 16; "
        "no card has 100% free"
    )
    assert failure.fitting_cards() == []


def test_qgpu_describe_when_core_fits_points_elsewhere() -> None:
    failure = decode_qgpu("failed to allocate (20, 10, 1) on (90, 30, 16)(60, 31, 16)")
    assert failure is not None
    assert failure.fitting_cards() == [1]
    assert "card(s) 1 have 20% core free, so core is not what blocks it" in failure.describe()


def test_qgpu_multi_card_request_needs_that_many_free_cards() -> None:
    failure = decode_qgpu("failed to allocate (200, 0, 2) on (0, 0, 16)(50, 3, 16)")
    assert failure is not None
    assert failure.describe().endswith("only 1 card(s) have 100% free, 2 needed")


def test_qgpu_without_cards_and_non_qgpu_text() -> None:
    failure = decode_qgpu("failed to allocate (5, 1, 1) on ")
    assert failure == QgpuAllocFailure(5, 1, 1, [])
    assert failure.describe().endswith("no card state was reported")
    assert decode_qgpu("Insufficient nvidia.com/gpu") is None


def _event(message: str, reason: str = "FailedScheduling", **times: Any) -> dict[str, Any]:
    return {"kind": "Event", "reason": reason, "message": message, **times}


def test_parse_event_messages_newest_first_and_filtered() -> None:
    events = [
        _event("0/1 nodes are available: 1 Insufficient cpu.", lastTimestamp="2026-05-08T06:00:00Z"),
        _event("Successfully assigned ai/x to n1", reason="Scheduled", lastTimestamp="2026-05-08T09:00:00Z"),
        _event(
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", lastTimestamp="2026-05-08T07:00:00Z"
        ),
        _event("0/3 nodes are available: 3 Too many pods.", eventTime="2026-05-08T08:30:00.123456Z"),
        _event("no nodes available to schedule pods"),
    ]
    parsed = parse_event_messages(events)
    assert [p.total_nodes for p in parsed] == [3, 2, 1, 0]
    assert all(isinstance(p, ParsedSchedulingMessage) for p in parsed)


def test_event_time_falls_back_through_series_and_creation() -> None:
    events = [
        {
            "reason": "FailedScheduling",
            "note": "0/4 nodes are available: 4 Too many pods.",
            "series": {"lastObservedTime": "2026-05-08T10:00:00Z"},
        },
        _event(
            "0/5 nodes are available: 5 Too many pods.",
            metadata={"creationTimestamp": "2026-05-08T11:00:00Z"},
        ),
        _event(
            "0/6 nodes are available: 6 Too many pods.",
            lastTimestamp="not a time",
            firstTimestamp="2026-05-08T09:00:00Z",
        ),
    ]
    assert [e.get("message", e.get("note"))[:3] for e in failed_scheduling_events(events)] == [
        "0/5",
        "0/4",
        "0/6",
    ]
    assert [p.total_nodes for p in parse_event_messages(events)] == [5, 4, 6]


def test_karpenter_failed_scheduling_is_not_a_scheduler_message() -> None:
    karpenter = {
        "reason": "FailedScheduling",
        "source": {"component": "karpenter"},
        "message": 'Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"pods":"3"}, '
        "incompatible requirements, key nvidia.com/gpu.product, nvidia.com/gpu.product In [NVIDIA-A10G] not in "
        "nvidia.com/gpu.product In [Tesla-T4]",
        "lastTimestamp": "2026-05-08T09:00:00Z",
    }
    scheduler = _event("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", lastTimestamp="2026-05-08T08:00:00Z")
    assert not is_scheduler_event(karpenter)
    assert not is_scheduler_event({**karpenter, "source": {}})  # recognised by its wording too
    assert is_scheduler_event(scheduler)
    assert [p.total_nodes for p in parse_event_messages([karpenter, scheduler])] == [2]


def test_categories_and_by_category() -> None:
    parsed = parse_scheduling_message(
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) were unschedulable."
    )
    assert parsed.categories == {"insufficient_gpu", "unschedulable"}
    assert [r.count for r in parsed.by_category("unschedulable")] == [2]
    assert parsed.preemption_parsed() is None


# --- property tests -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_parser(text: str) -> None:
    parsed = parse_scheduling_message(text)
    assert parsed.raw == text
    assert all(r.category in CATEGORIES for r in parsed.reasons)


LABELISH = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=1, max_size=20)
KNOWN_REASONS: list[tuple[st.SearchStrategy[str], str]] = [
    (
        st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "tke.cloud.tencent.com/qgpu-core"]).map(
            lambda r: f"Insufficient {r}"
        ),
        "insufficient_gpu",
    ),
    (
        st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage"]).map(lambda r: f"Insufficient {r}"),
        "insufficient_other",
    ),
    (
        st.tuples(LABELISH, st.text(alphabet="abc123-", max_size=8)).map(
            lambda kv: f"node(s) had untolerated taint {{{kv[0]}: {kv[1]}}}"
        ),
        "untolerated_taint",
    ),
    (
        st.tuples(LABELISH, st.text(alphabet="abc123-", max_size=8)).map(
            lambda kv: f"node(s) had taint {{{kv[0]}: {kv[1]}}}, that the pod didn't tolerate"
        ),
        "untolerated_taint",
    ),
    (st.just("node(s) had taints that the pod didn't tolerate"), "untolerated_taint"),
    (
        st.sampled_from(
            ["node(s) didn't match Pod's node affinity/selector", "node(s) didn't match node selector"]
        ),
        "node_selector",
    ),
    (st.just("node(s) were unschedulable"), "unschedulable"),
    (st.just("Too many pods"), "too_many_pods"),
    (st.just("node(s) had volume node affinity conflict"), "volume"),
    (
        st.tuples(
            *[st.integers(0, 999)] * 3, st.lists(st.tuples(*[st.integers(0, 999)] * 3), max_size=4)
        ).map(
            lambda t: (
                f"failed to allocate ({t[0]}, {t[1]}, {t[2]}) on "
                + "".join(f"({a}, {b}, {c})" for a, b, c in t[3])
            )
        ),
        "qgpu_alloc_failed",
    ),
]


@st.composite
def histograms(draw: st.DrawFn) -> tuple[str, list[tuple[int, str]]]:
    picks = draw(st.lists(st.sampled_from(range(len(KNOWN_REASONS))), min_size=1, max_size=6))
    items = [(draw(st.integers(1, 999)), draw(KNOWN_REASONS[i][0]), KNOWN_REASONS[i][1]) for i in picks]
    total = sum(count for count, _, _ in items)
    joiner = draw(st.sampled_from([", ", "\n  ", ",\n  "]))
    body = joiner.join(f"{count} {text}" for count, text, _ in items)
    header = draw(st.sampled_from(["", "(combined from similar events): ", "Warning FailedScheduling 3m "]))
    tail = draw(
        st.sampled_from(
            [
                ".",
                "..",
                "",
                ". preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling.",
                ". preemption: No preemption victims found for incoming pod..",
            ]
        )
    )
    message = f"{header}0/{total} nodes are available:{' ' if joiner == ', ' else chr(10) + '  '}{body}{tail}"
    # Whole-taint entries with non-tainting keys are reclassified; compare with the classifier's view.
    return message, [(count, category) for count, _, category in items]


@settings(max_examples=300, deadline=None)
@given(histograms())
def test_structured_histograms_round_trip(case: tuple[str, list[tuple[int, str]]]) -> None:
    message, expected = case
    parsed = parse_scheduling_message(message)
    assert parsed.total_nodes == sum(c for c, _ in expected)
    assert [r.count for r in parsed.reasons] == [c for c, _ in expected]
    for reason, (_, category) in zip(parsed.reasons, expected, strict=True):
        if category == "untolerated_taint" and reason.taint is not None:
            assert reason.category in ("untolerated_taint", "not_ready", "unschedulable")
        else:
            assert reason.category == category, (message, reason)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "0/",
                "3",
                " nodes are available:",
                " ",
                ",",
                "\n",
                "{",
                "}",
                "(",
                ")",
                "preemption:",
                ".",
                "failed to allocate",
                " on ",
                "(1, 2, 3)",
                "Insufficient ",
                "node(s) had taint {a: b}, that",
                "99999999999999",
            ]
        ),
        max_size=40,
    ).map("".join)
)
def test_grammar_fragments_never_crash(text: str) -> None:
    parsed = parse_scheduling_message(text)
    for reason in parsed.reasons:
        assert reason.count >= 0
        if reason.qgpu is not None:
            reason.qgpu.describe()


def test_logic_package_exports_are_pinned() -> None:
    # Checks and probes import these names; removing one is a breaking change.
    import bot.kube as logic

    expected = {
        "parse_scheduling_message",
        "parse_event_messages",
        "failed_scheduling_events",
        "decode_qgpu",
        "ParsedSchedulingMessage",
        "Reason",
        "TaintRef",
        "QgpuAllocFailure",
        "CardState",
        "tolerates",
        "untolerated_taints",
        "node_taints",
        "suggest_toleration",
        "toleration_yaml",
        "taint_str",
        "UNSCHEDULABLE_TAINT",
        "UNSCHEDULABLE_TAINT_KEY",
        "node_matches",
        "MatchResult",
        "describe_selection",
        "matching_nodes",
        "parse_quantity",
        "is_gpu_resource",
        "gpu_family",
        "pod_gpu_requests",
        "pod_requests",
        "container_gpu_resources",
        "container_requests",
        "spec_problems",
        "SpecProblem",
        "node_gpu_capacity",
        "GPU_RESOURCE_PATTERNS",
        "QGPU_CORE",
        "QGPU_MEMORY",
        "classify",
        "PodState",
    }
    assert set(logic.__all__) == expected
    assert all(hasattr(logic, name) for name in logic.__all__)


def test_event_facts_parse_only_what_the_checks_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 events on one pod: the checks read the newest message, so only that is parsed (the
    list keeps its length and order; a repeated text is parsed once)."""
    events = [
        _event(f"0/{n % 7 + 1} nodes are available: {n % 7 + 1} Insufficient nvidia.com/gpu.",
               lastTimestamp=f"2026-05-08T{6 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z")
        for n in range(20000)
    ]
    parsed_texts: list[str] = []

    def counting(text: str) -> ParsedSchedulingMessage:
        parsed_texts.append(text)
        return parse_scheduling_message(text)

    monkeypatch.setattr(facts_module, "parse_scheduling_message", counting)
    scheduling = facts_module.EventFacts(pod=events).scheduling
    assert len(scheduling) == 20000 and bool(scheduling)
    everything = parse_event_messages(events)
    assert scheduling[0] == everything[0] and scheduling[:1] == everything[:1]
    assert len(parsed_texts) == 1
    assert scheduling[:14] == everything[:14]
    assert len(parsed_texts) == 7  # 14 messages, 7 distinct texts
