"""Ids of pending actions: unguessable, and recognisable before any lookup.

The Slack button value carries only this id, so the id is the whole capability: 24 random bytes
(192 bits) from ``secrets``. A value that does not have the shape of an id is refused without a
store lookup and is never echoed back in full (it came from a request anyone can forge).

Never derive an id from the action, the user or a clock.
"""

from __future__ import annotations

import re
import secrets

#: bytes of randomness in an id; base64url makes 32 characters of them
ID_BYTES = 24
_ID_RE = re.compile(r"[A-Za-z0-9_-]{32}")


def new_action_id() -> str:
    return secrets.token_urlsafe(ID_BYTES)


def is_well_formed(value: object) -> bool:
    """True if ``value`` could be an id we issued (shape only; the store decides if it exists)."""
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def safe_for_log(value: object) -> str:
    """A short, printable form of an untrusted id for the audit trail."""
    text = value if isinstance(value, str) else repr(value)
    cleaned = "".join(ch if ch.isprintable() else "?" for ch in text[:40])
    return cleaned + ("…" if len(text) > 40 else "")
