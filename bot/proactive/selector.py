"""Namespace label selectors of the watch's routes: the equality forms of Kubernetes selectors.

``k=v``, ``k==v``, ``k!=v``, ``k`` (has the label), ``!k`` (has not), comma-separated, all must
hold. Set forms (``in``, ``notin``) are refused at load time rather than half-understood. Its own
module, importing nothing of gpubot's but errors, so the settings can check a route when loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import ConfigError

_KEY = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]{0,251}[a-z0-9A-Z])?/)?[a-z0-9A-Z](?:[-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?)?"
_TERM = re.compile(rf"^(?:(?P<not>!)(?P<absent>{_KEY})|(?P<key>{_KEY})(?:\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE}))?)$")


@dataclass(frozen=True)
class Requirement:
    key: str
    #: ``=``, ``!=``, ``exists`` or ``absent``
    op: str
    value: str = ""

    def holds(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "absent":
            return self.key not in labels
        if self.op == "=":
            return labels.get(self.key) == self.value
        return labels.get(self.key) != self.value


def parse_selector(text: str) -> tuple[Requirement, ...]:
    """An equality-based label selector; ``ConfigError`` for anything else (set forms included)."""
    out = []
    for part in text.split(","):
        match = _TERM.fullmatch(part.strip())
        if match is None:
            raise ConfigError(f"namespace_selector: cannot read {part.strip()[:60]!r} (use k=v, k!=v, k or !k)")
        if match["absent"]:
            out.append(Requirement(match["absent"], "absent"))
        elif match["op"] is None:
            out.append(Requirement(match["key"], "exists"))
        else:
            out.append(Requirement(match["key"], "!=" if match["op"] == "!=" else "=", match["value"] or ""))
    if not out:
        raise ConfigError("namespace_selector: empty")
    return tuple(out)
