"""Who may approve which action: the approver lists from settings, and the two-person rule.

Approver lists are keyed by an exact action name (``kubelet.restart``), an action class
(``kubelet.*``, ``node.*``) or ``*``. The most specific key that matches wins, alone: an exact
name beats the longest class prefix, which beats ``*``. That lets an operator say "any SRE may
cordon, but only the GPU on-call may restart kubelet" (``*: [S-sre]``, ``kubelet.*: [S-gpu]``)
and switch an action off entirely with an empty list.

Ids beginning with ``S`` are Slack user groups (subteams); ``U``/``W`` ids are users; ``cli:<user>``
names a command-line user. This module decides only; it never reads Slack, settings files or
the store, so the decision is a pure function that tests can pin down.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.errors import ConfigError

_USER_RE = re.compile(r"[UW][A-Z0-9]{2,}")
_GROUP_RE = re.compile(r"S[A-Z0-9]{2,}")
_CLI_RE = re.compile(r"cli:[A-Za-z0-9._@-]{1,64}")
_KEY_RE = re.compile(r"\*|[a-z0-9-]+(\.[a-z0-9-]+)*(\.\*)?")
#: every form an approver id may take (the Helm chart's values schema is built from these)
ID_FORMS = (_USER_RE, _GROUP_RE, _CLI_RE)


@dataclass(frozen=True)
class Decision:
    """Whether one click may approve one action, with the reason shown to the clicker and written to
    the audit trail, so a refusal is never silent."""

    allowed: bool
    #: why, in one line a person can read (shown to the clicker and written to the audit trail)
    reason: str
    #: the clicker is on the action's approver list (true also when only the two-person rule
    #: stops them: their click then counts as the first of two approvals)
    approver: bool = False


@dataclass(frozen=True)
class Approvers:
    """Who may approve one action: user ids and user-group ids (both empty: nobody)."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.users or self.groups)


@dataclass(frozen=True)
class _Approvers:
    """The users and groups allowed to approve one action, as sets, so each click is checked by
    membership."""

    key: str
    users: frozenset[str]
    groups: frozenset[str]


class ApproverPolicy:
    """Decides whether one user may approve one action."""

    def __init__(self, approvers: Mapping[str, tuple[str, ...]], two_person_rule: bool) -> None:
        self.two_person_rule = two_person_rule
        self._by_key: dict[str, _Approvers] = {}
        for key, ids in approvers.items():
            if not _KEY_RE.fullmatch(key):
                raise ConfigError(
                    f"setting approvers: {key!r} is not an action name, a class like 'node.*', or '*'"
                )
            users: set[str] = set()
            groups: set[str] = set()
            for ident in ids:
                if _GROUP_RE.fullmatch(ident):
                    groups.add(ident)
                elif _USER_RE.fullmatch(ident) or _CLI_RE.fullmatch(ident):
                    users.add(ident)
                else:
                    raise ConfigError(
                        f"setting approvers[{key}]: {ident!r} is not a Slack user id (U…/W…), "
                        "a user-group id (S…) or cli:<user>"
                    )
            self._by_key[key] = _Approvers(key, frozenset(users), frozenset(groups))

    def decide(self, action: str, user_id: str, user_groups: Iterable[str], requested_by: str) -> Decision:
        entry = self._lookup(action)
        if entry is None or not (entry.users or entry.groups):
            return Decision(False, f"no approvers configured for {action}")
        if user_id in entry.users:
            why = f"{user_id} is an approver for {action} ({entry.key})"
        else:
            matched = sorted(entry.groups.intersection(user_groups))
            if not matched:
                return Decision(False, f"{user_id} is not an approver for {action}")
            why = f"{user_id} is in approver group {matched[0]} for {action} ({entry.key})"
        if self.two_person_rule and user_id == requested_by:
            return Decision(False, "two-person rule: the requester may not approve their own request", approver=True)
        return Decision(True, why, approver=True)

    def approvers_of(self, action: str) -> Approvers:
        """Who may approve ``action`` (the most specific matching entry); empty: nobody may."""
        entry = self._lookup(action)
        return Approvers(entry.users, entry.groups) if entry is not None else Approvers()

    def _lookup(self, action: str) -> _Approvers | None:
        exact = self._by_key.get(action)
        if exact is not None:
            return exact
        best: _Approvers | None = None
        for key, entry in self._by_key.items():
            if (
                key.endswith(".*")
                and action.startswith(key[:-1])
                and (best is None or len(key) > len(best.key))
            ):
                best = entry
        return best if best is not None else self._by_key.get("*")
