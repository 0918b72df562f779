"""Label selectors from API objects, as the text the list calls take."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def selector_string(selector: Obj | None) -> str:
    """A label selector string from ``spec.selector`` (matchLabels and matchExpressions)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)
