"""Per-user authority in Slack: which Kubernetes identity a Slack user's diagnoses read as.

``identity_map`` maps Slack user ids and user-group ids to a Kubernetes user and groups. A user's
own entry wins; otherwise the first group entry (in settings order) whose Slack user group has
them as a member. With a map configured, an asker matched by no entry gets no diagnosis at all:
falling back to the bot's own (wider) rights is exactly what per-user authority must prevent.
Without a map nothing is looked up and every diagnosis reads as the bot, as before.

This module only looks people up (``usergroups.users.list``); it never reads the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import NotAuthorizedError
from bot.identity import Identity
from bot.slack.web import failure_text

log = logging.getLogger("gpubot.slack.identities")

NOT_MAPPED = (
    "gpubot reads the cluster with each person's own Kubernetes permissions here, and none are "
    "mapped for you; ask the operators to add you (or one of your user groups) to identity_map."
)


class SlackIdentities:
    """Resolves a Slack user to the Kubernetes identity their diagnoses impersonate."""

    def __init__(self, identity_map: Mapping[str, Identity], client: AsyncWebClient | None) -> None:
        self.identity_map = dict(identity_map)
        self.client = client

    @property
    def enabled(self) -> bool:
        return bool(self.identity_map)

    async def identity_for(self, user_id: str) -> Identity | None:
        """The identity of ``user_id``; None when per-user authority is off.

        Raises ``NotAuthorizedError`` when it is on and nothing maps the user.
        """
        if not self.identity_map:
            return None
        own = self.identity_map.get(user_id)
        if own is not None:
            return own
        for key, identity in self.identity_map.items():
            if key.startswith("S") and await self._member(key, user_id):
                return identity
        raise NotAuthorizedError(NOT_MAPPED)

    async def _member(self, group: str, user_id: str) -> bool:
        if self.client is None:
            return False
        try:
            resp = await self.client.usergroups_users_list(usergroup=group)
        except SlackApiError as exc:
            log.warning("usergroups.users.list %s failed: %s", group, failure_text(exc))
            return False
        return user_id in (resp.get("users") or [])
