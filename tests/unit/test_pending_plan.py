"""Which workloads ``gpubot pending`` diagnoses, and what it claims for the ones it does not.

One diagnosis per signature comes first; the confirmations after it go round the signatures, a
few each, from namespaces not yet diagnosed for them. A workload counted "like" diagnosed ones
takes their cause only where they agree.
"""

from __future__ import annotations

from bot.pending.run import EXTRAS_PER_SIGNATURE, _Outcome, build_answer, plan
from bot.pending.scan import Stuck
from bot.report import Finding
from bot.report.pending import NO_CAUSE


def _stuck(namespace: str, name: str, signature: str) -> Stuck:
    pod = {"metadata": {"name": f"{name}-0", "namespace": namespace, "creationTimestamp": "2026-12-01T00:00:00Z"}}
    return Stuck(namespace, "Deployment", name, pods=[pod], signature=(signature,))


def _finding(code: str) -> Finding:
    return Finding(code=code, severity="critical", title=code.lower())


def test_one_per_signature_then_confirmations_in_turn_from_new_namespaces() -> None:
    # signature "a": 6 workloads in ns-0 and ns-1; signature "b": 2 workloads in ns-0
    stuck = [_stuck(f"ns-{i % 2}", f"a{i}", "a") for i in range(6)]
    stuck += [_stuck("ns-0", "b0", "b"), _stuck("ns-0", "b1", "b")]
    stuck.sort(key=lambda s: (s.namespace, s.name))
    chosen, left = plan(stuck, bound=20)
    assert [s.signature for s in chosen[:2]] == [("a",), ("b",)]
    extras = chosen[2:]
    assert [s.signature[0] for s in extras][:2] == ["a", "b"], "the signatures take turns, the larger first"
    assert extras[0].namespace == "ns-1", "a signature's first confirmation comes from another namespace"
    assert sum(s.signature == ("a",) for s in extras) == EXTRAS_PER_SIGNATURE
    assert len(chosen) + len(left) == len(stuck) and not {id(s) for s in chosen} & {id(s) for s in left}


def test_the_bound_holds_over_firsts_and_confirmations() -> None:
    stuck = [_stuck("ns", f"w{i}", f"sig{i % 4}") for i in range(40)]
    chosen, left = plan(stuck, bound=6)
    assert len(chosen) == 6 and len(left) == 34
    assert len({s.signature for s in chosen[:4]}) == 4, "every signature is diagnosed once before any confirmation"


def test_likes_take_the_cause_only_where_the_diagnosed_agree() -> None:
    agree = [_stuck("ns-0", "a0", "a"), _stuck("ns-1", "a1", "a"), _stuck("ns-2", "a2", "a")]
    mixed = [_stuck("ns-0", "b0", "b"), _stuck("ns-1", "b1", "b"), _stuck("ns-2", "b2", "b")]
    outcomes = [
        _Outcome(agree[0], _finding("CAPACITY_EXHAUSTED"), []),
        _Outcome(agree[1], _finding("CAPACITY_EXHAUSTED"), []),
        _Outcome(mixed[0], _finding("CAPACITY_EXHAUSTED"), []),
        _Outcome(mixed[1], _finding("TERMINATING_HOLDS_GPU"), []),
    ]
    answer = build_answer("", agree + mixed, outcomes, [agree[2], mixed[2]], bound=4, why_left="over the limit")
    likes = [line for g in answer.groups for line in g.lines if not line.diagnosed]
    assert [(line.workload, line.code) for line in likes] == [("deployment/a2", "CAPACITY_EXHAUSTED")]
    assert [line.workload for line in answer.undiagnosed] == ["deployment/b2"]
    assert answer.undiagnosed[0].code == NO_CAUSE
    assert answer.undiagnosed_why == "1 whose like workloads were diagnosed with different causes"


def test_the_reasons_for_not_diagnosing_are_both_said() -> None:
    stuck = [_stuck("ns", "a0", "a"), _stuck("ns", "a1", "a"), _stuck("ns", "a2", "a"), _stuck("ns", "c0", "c")]
    outcomes = [_Outcome(stuck[0], _finding("CAPACITY_EXHAUSTED"), []), _Outcome(stuck[1], None, [])]
    answer = build_answer("", stuck, outcomes, [stuck[2], stuck[3]], bound=2, why_left="over the limit of 2 diagnoses")
    assert answer.undiagnosed_why == (
        "over the limit of 2 diagnoses; 1 whose like workloads were diagnosed with different causes")
