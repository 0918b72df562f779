"""Who a diagnosis reads the cluster as: a Kubernetes user and groups, for per-user authority.

With ``identity_map`` set, a Slack user (or a member of a Slack user group) is mapped to a
Kubernetes user and groups, and their diagnoses read the API with impersonation headers
(``Impersonate-User``, one ``Impersonate-Group`` per group): the API server applies that user's
RBAC, so a person sees only what they could read with kubectl, and what they may not read is
reported as skipped. Actions are unaffected (they still need approvers, and run as the bot).

The names become HTTP header values, so they are checked here: printable, no separators that
could split a header, bounded. This module holds only the value type and its checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import ConfigError

#: Slack user (U…/W…) or user-group (S…) ids: the keys of ``identity_map``
_SLACK_ID = re.compile(r"[UWS][A-Z0-9]{2,}")
#: a Kubernetes user or group name as a header value: printable ASCII without separators that
#: a header parser could split on
_K8S_NAME = re.compile(r"[A-Za-z0-9@._:/+=-]{1,253}")


@dataclass(frozen=True)
class Identity:
    """A Kubernetes user and its groups, as the API server should see the reader."""

    #: the Kubernetes user name the reads are made as (Impersonate-User)
    user: str
    #: the Kubernetes groups of that user (one Impersonate-Group each)
    groups: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.user + (f" ({', '.join(self.groups)})" if self.groups else "")


def parse_identity_map(raw: Any) -> dict[str, Identity]:
    """``{U0ALICE: {user: alice, groups: [ml-team]}, S0ML: {user: ml-bot}}`` → identities.

    Raises ``ConfigError`` naming the key (never a value it could not read) for anything else.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("setting identity_map: expected a mapping of Slack user/group id -> {user, groups}")
    out: dict[str, Identity] = {}
    for key, value in raw.items():
        slack_id = str(key)
        if not _SLACK_ID.fullmatch(slack_id):
            raise ConfigError(
                f"setting identity_map: {slack_id[:40]!r} is not a Slack user (U…/W…) or user-group (S…) id"
            )
        if not isinstance(value, Mapping) or set(value) - {"user", "groups"}:
            raise ConfigError(f"setting identity_map[{slack_id}]: expected {{user, groups}}")
        user = value.get("user")
        groups = value.get("groups") or []
        if not isinstance(user, str) or not _K8S_NAME.fullmatch(user):
            raise ConfigError(f"setting identity_map[{slack_id}].user: expected a Kubernetes user name")
        if not isinstance(groups, list) or not all(isinstance(g, str) and _K8S_NAME.fullmatch(g) for g in groups):
            raise ConfigError(f"setting identity_map[{slack_id}].groups: expected a list of Kubernetes group names")
        out[slack_id] = Identity(user, tuple(groups))
    return out
