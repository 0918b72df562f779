"""Namespace label selectors of the watch's routes, read with the one selector parser.

A route's ``namespace_selector`` is a Kubernetes label selector in its text form (``k=v``,
``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``, comma-separated, all must
hold), parsed and matched by ``bot.kube.selectors``. This module only words a selector it cannot
read as a setting error, so the settings can check a route when loaded; it imports nothing of
gpubot's but that parser and errors.
"""

from __future__ import annotations

from bot.errors import ConfigError
from bot.kube.selectors import LabelRequirement, SelectorError, parse_label_selector


def parse_selector(text: str) -> tuple[LabelRequirement, ...]:
    """The route's requirements; ``ConfigError`` for text the API would refuse, or for none at all."""
    try:
        requirements = parse_label_selector(text)
    except SelectorError:
        raise ConfigError(
            f"namespace_selector: cannot read {text.strip()[:60]!r} (use k=v, k!=v, k, !k, k in (a,b))"
        ) from None
    if not requirements:
        raise ConfigError("namespace_selector: empty")
    return requirements
