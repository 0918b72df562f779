"""Who may approve what: key precedence, users and groups, the two-person rule, bad settings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import ConfigError
from bot.remediation.policy import ApproverPolicy, Approvers, Decision

APPROVERS = {
    "*": ("S0SRE",),
    "node.*": ("U0NODE", "S0NODE"),
    "kubelet.*": ("S0GPUONCALL",),
    "kubelet.restart": ("U0KUBELET", "W0ENTERPRISE"),
    "namespace.label": (),
    "checkpoint.clear": ("cli:alice",),
}


@pytest.fixture
def policy() -> ApproverPolicy:
    return ApproverPolicy(APPROVERS, two_person_rule=False)


@pytest.mark.parametrize(
    ("action", "user", "groups", "allowed"),
    [
        # exact name wins over its class and over "*"
        ("kubelet.restart", "U0KUBELET", (), True),
        ("kubelet.restart", "W0ENTERPRISE", (), True),
        ("kubelet.restart", "U0SOMEONE", ("S0GPUONCALL",), False),
        ("kubelet.restart", "U0SOMEONE", ("S0SRE",), False),
        # class prefix wins over "*"
        ("kubelet.other", "U0SOMEONE", ("S0GPUONCALL",), True),
        ("kubelet.other", "U0SOMEONE", ("S0SRE",), False),
        ("node.cordon", "U0NODE", (), True),
        ("node.uncordon", "U0SOMEONE", ("S0OTHER", "S0NODE"), True),
        ("node.cordon", "U0SOMEONE", ("S0SRE",), False),
        # everything else falls to "*"
        ("pod.delete", "U0SOMEONE", ("S0SRE",), True),
        ("pod.delete", "U0SOMEONE", ("S0OTHER",), False),
        ("pod.delete", "U0SOMEONE", (), False),
        # a class prefix is matched on the dot, not on the text
        ("nodes.cordon", "U0NODE", (), False),
        ("checkpoint.clear", "cli:alice", (), True),
        ("checkpoint.clear", "cli:bob", (), False),
    ],
)
def test_decide(
    policy: ApproverPolicy, action: str, user: str, groups: tuple[str, ...], allowed: bool
) -> None:
    decision = policy.decide(action, user, groups, requested_by="U0REQUEST")
    assert decision.allowed is allowed, decision.reason
    assert decision.reason and "\n" not in decision.reason


def test_user_id_is_not_matched_as_a_group(policy: ApproverPolicy) -> None:
    # a user whose id equals a group id in the list must still be in the group
    assert not policy.decide("pod.delete", "S0SRE", (), "U0REQUEST").allowed


def test_refusal_reasons(policy: ApproverPolicy) -> None:
    assert policy.decide("pod.delete", "U0X", (), "U0R") == Decision(
        False, "U0X is not an approver for pod.delete"
    )
    assert "S0SRE" in policy.decide("pod.delete", "U0X", ("S0SRE",), "U0R").reason


def test_nobody_configured_refuses() -> None:
    empty = ApproverPolicy({}, two_person_rule=False)
    assert empty.decide("kubelet.restart", "U0X", ("S0SRE",), "U0R") == Decision(
        False, "no approvers configured for kubelet.restart"
    )
    only_nodes = ApproverPolicy({"node.*": ("U0X",)}, two_person_rule=False)
    assert (
        only_nodes.decide("pod.delete", "U0X", (), "U0R").reason == "no approvers configured for pod.delete"
    )


def test_an_empty_list_switches_an_action_off(policy: ApproverPolicy) -> None:
    # "*" would allow S0SRE, but the exact key with an empty list wins
    decision = policy.decide("namespace.label", "U0X", ("S0SRE",), "U0R")
    assert decision == Decision(False, "no approvers configured for namespace.label")


def test_two_person_rule_refuses_the_requester() -> None:
    strict = ApproverPolicy({"*": ("U0ALICE", "U0BOB")}, two_person_rule=True)
    refused = strict.decide("pod.delete", "U0ALICE", (), requested_by="U0ALICE")
    assert not refused.allowed and "two-person rule" in refused.reason
    assert strict.decide("pod.delete", "U0BOB", (), requested_by="U0ALICE").allowed
    lax = ApproverPolicy({"*": ("U0ALICE",)}, two_person_rule=False)
    assert lax.decide("pod.delete", "U0ALICE", (), requested_by="U0ALICE").allowed


def test_who_may_approve_and_whether_the_clicker_is_one() -> None:
    strict = ApproverPolicy({"*": ("U0ALICE", "S0SRE"), "kubelet.*": ("U0BOB",), "qgpu.*": ()}, True)
    assert strict.approvers_of("pod.delete") == Approvers(frozenset({"U0ALICE"}), frozenset({"S0SRE"}))
    assert strict.approvers_of("kubelet.restart") == Approvers(frozenset({"U0BOB"}))
    assert not strict.approvers_of("qgpu.restart-manager")
    assert not ApproverPolicy({}, False).approvers_of("pod.delete")
    own = strict.decide("pod.delete", "U0ALICE", (), requested_by="U0ALICE")
    assert not own.allowed and own.approver  # an approver, stopped only by the two-person rule
    stranger = strict.decide("pod.delete", "U0EVE", (), requested_by="U0ALICE")
    assert not stranger.allowed and not stranger.approver


def test_two_person_rule_applies_to_group_members_too() -> None:
    strict = ApproverPolicy({"*": ("S0SRE",)}, two_person_rule=True)
    assert not strict.decide("pod.delete", "U0ALICE", ("S0SRE",), requested_by="U0ALICE").allowed


@pytest.mark.parametrize(
    ("approvers", "message"),
    [
        ({"*": ("alice",)}, "not a Slack user id"),
        ({"*": ("u0lower",)}, "not a Slack user id"),
        ({"*": ("C0CHANNEL",)}, "not a Slack user id"),
        ({"*": ("cli:",)}, "not a Slack user id"),
        ({"kubelet*": ("U0X",)}, "not an action name"),
        ({"Kubelet.Restart": ("U0X",)}, "not an action name"),
        ({"": ("U0X",)}, "not an action name"),
    ],
)
def test_bad_settings_are_refused_at_start(approvers: dict[str, tuple[str, ...]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ApproverPolicy(approvers, two_person_rule=False)


_ids = st.from_regex(r"U[A-Z0-9]{4,8}", fullmatch=True)
_groups = st.from_regex(r"S[A-Z0-9]{4,8}", fullmatch=True)
_actions = st.sampled_from(["pod.delete", "kubelet.restart", "node.cordon", "qgpu.restart-manager", "x.y"])


@given(
    configured_users=st.lists(_ids, max_size=4),
    configured_groups=st.lists(_groups, max_size=4),
    clicker=_ids,
    clicker_groups=st.lists(_groups, max_size=4),
    action=_actions,
)
def test_allowed_only_if_listed_directly_or_through_a_group(
    configured_users: list[str],
    configured_groups: list[str],
    clicker: str,
    clicker_groups: list[str],
    action: str,
) -> None:
    policy = ApproverPolicy({"*": (*configured_users, *configured_groups)}, two_person_rule=True)
    decision = policy.decide(action, clicker, clicker_groups, requested_by="U0REQUESTER")
    expected = clicker in configured_users or bool(set(clicker_groups) & set(configured_groups))
    assert decision.allowed is expected
    # and the requester never approves their own request under the two-person rule
    assert not policy.decide(action, clicker, clicker_groups, requested_by=clicker).allowed
