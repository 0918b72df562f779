"""Where a watch's problem is posted, and whom it names: per namespace, from labels and an annotation.

A watch has a fallback channel (its ``channel``) and optional routes, each a namespace label
selector and a channel: the first route whose selector matches the problem's namespace labels
wins; a problem about no namespace (a node, the device plugin) goes to the fallback channel.
Selectors are Kubernetes label selectors in their text form (``k=v``, ``k!=v``, ``k``, ``!k``,
``k in (a,b)``, ``k notin (a,b)``, comma-separated, all must hold), read by ``bot.kube.selectors``.

The owning team comes from a namespace annotation (``owner_annotation``, default
``gpubot.dev/owner``). Its value is cluster data anyone with namespace edit rights can set, so it
is only used when it is exactly a Slack user id (``U…``/``W…``), a user-group id (``S…``) or a
plain handle (``@ml-team``: letters, digits, ``.``, ``_``, ``-``); anything else (markup,
``<!channel>``, text) is dropped with a log line and nothing reaches Slack.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import meta_of
from bot.kube.selectors import labels_match, parse_label_selector
from bot.observability import log_event
from bot.settings import WatchConfig

log = logging.getLogger("gpubot.watch")

#: what an owner annotation may hold: a user id, a user-group id, or a plain handle
_USER = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_GROUP = re.compile(r"^S[A-Z0-9]{2,20}$")
_HANDLE = re.compile(r"^@[a-z0-9][a-z0-9._-]{0,79}$")


def owner_of(value: str) -> str:
    """The annotation's value when it is a user id, a group id or a handle; else ``""``."""
    value = value.strip()
    if _USER.fullmatch(value) or _GROUP.fullmatch(value) or _HANDLE.fullmatch(value):
        return value
    return ""



@dataclass(frozen=True)
class Route:
    """A routing decision: the channel, and the owning team to name ("" for none)."""

    channel: str
    owner: str = ""


class Router:
    """A watch's routes, parsed once."""

    def __init__(self, config: WatchConfig) -> None:
        self.fallback = config.channel
        self.annotation = config.owner_annotation
        # the settings refused any selector that does not parse (``bot.settings.values.route_selector``)
        self.routes = [(parse_label_selector(r.namespace_selector), r.channel) for r in config.routes]
        #: every channel this watch may post to: the fallback first
        self.channels = tuple(dict.fromkeys([config.channel, *(r.channel for r in config.routes)]))

    def route(self, namespace: Mapping[str, Any] | None) -> Route:
        """The channel and owner for a problem in ``namespace`` (``None``: no namespace)."""
        if namespace is None:
            return Route(self.fallback)
        meta = meta_of(namespace)
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        channel = next((ch for reqs, ch in self.routes if labels_match(reqs, labels)), self.fallback)
        raw = str((meta.get("annotations") or {}).get(self.annotation) or "") if self.annotation else ""
        owner = owner_of(raw)
        if raw and not owner:
            log_event(
                log,
                "watch: owner annotation ignored: not a Slack user id, group id or handle",
                level=logging.WARNING,
                namespace=str(meta.get("name") or ""),
            )
        return Route(channel, owner)
