"""The one way gpubot's state writes and reads a time, in every backend.

``2026-11-30T10:00:00.123456Z``: UTC, microseconds, fixed width, so text order is time order
(SQLite compares them as text; the Kubernetes objects carry the same strings). ``parse_ts`` also
reads the API server's own whole-second times (``creationTimestamp``, ``renewTime``).
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_ts(ts: datetime) -> str:
    """``2026-11-30T10:00:00.123456Z``: fixed width, so text order is time order."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    """A time written by ``format_ts`` (or an RFC 3339 time of the API server) as aware UTC."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def now_utc() -> datetime:
    """This host's clock, in UTC (the SQLite state's clock: whoever holds the file)."""
    return datetime.now(UTC)
