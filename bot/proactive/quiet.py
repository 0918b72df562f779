"""Quiet hours: a daily window in which the watch holds back new posts that are not critical.

``"22:00-07:00"`` in a named time zone (``Europe/Berlin``; default UTC) spans midnight; a window
whose start equals its end is refused (all day or never is better said by ``enabled``). The
severity that still posts is the finding catalogue's (``runbooks/findings.yaml``): a critical
problem wakes people, a warning waits for the morning. This module only tells time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.errors import ConfigError

_SPAN = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
#: severities that post even in quiet hours
LOUD = frozenset({"critical"})


@dataclass(frozen=True)
class QuietHours:
    start: time
    end: time
    zone: ZoneInfo

    @classmethod
    def parse(cls, span: str, zone: str = "UTC") -> QuietHours | None:
        """``"HH:MM-HH:MM"`` in ``zone``; ``None`` for an empty span; ``ConfigError`` otherwise."""
        if not span:
            return None
        match = _SPAN.match(span.strip())
        if match is None:
            raise ConfigError(f"quiet_hours: expected HH:MM-HH:MM, got {span[:40]!r}")
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        if (h1, m1) == (h2, m2):
            raise ConfigError("quiet_hours: start and end are the same time")
        try:
            tz = ZoneInfo(zone or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"quiet_hours_timezone: unknown time zone {zone[:60]!r}") from None
        return cls(time(h1, m1), time(h2, m2), tz)

    def active(self, at: datetime) -> bool:
        """Whether ``at`` (an aware datetime) falls inside the window, in the window's zone."""
        local = at.astimezone(self.zone).time().replace(tzinfo=None)
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end  # spans midnight

    def holds(self, severity: str, at: datetime) -> bool:
        """A new post of ``severity`` waits at ``at``."""
        return severity not in LOUD and self.active(at)
