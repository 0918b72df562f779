"""The Slack scopes gpubot needs: one table, which the app manifests in deploy/ must match.

``SCOPE_OF`` maps each Web API method the bot calls to the bot scope it needs (None: none);
tests/slack/test_manifest.py finds the methods in the source and checks both manifests declare
exactly ``BOT_SCOPES``, and ``gpubot doctor`` checks an installed token's granted scopes
(``auth.test``'s ``x-oauth-scopes`` header) against them. No Slack client is imported here.
"""

from __future__ import annotations

#: the bot scope each Web API method the bot calls needs (None: no scope)
SCOPE_OF: dict[str, str | tuple[str, ...] | None] = {
    "auth_test": None,
    # with the app-level token (Socket Mode), which carries APP_TOKEN_SCOPE, not a bot scope
    "apps_connections_open": None,
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    # finding a post whose ts was never recorded; a watch channel may be public or private
    "conversations_history": ("channels:history", "groups:history"),
    "files_upload_v2": "files:write",
    "usergroups_users_list": "usergroups:read",
}
#: receiving ``/gpu`` needs ``commands``, though no Web API method does
BOT_SCOPES: frozenset[str] = frozenset(
    {"commands"} | {s for v in SCOPE_OF.values() for s in ((v,) if isinstance(v, str) else v or ())}
)
#: the app-level token (Socket Mode) needs exactly this one
APP_TOKEN_SCOPE = "connections:write"  # noqa: S105 - a scope name, not a secret
