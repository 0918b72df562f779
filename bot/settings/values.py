"""Strict readers for one setting's value: the type it must have, or a named ``ConfigError``.

A settings file is YAML, so a value already has a type: ``dry_run: true`` is a boolean and
``dry_run: 'ture'`` is text, which must be refused rather than read as False (the bot would then
act for real). Environment variables are always text, so there, and only there, a documented set
of spellings is read: ``true/false``, ``1/0``, ``yes/no``, ``on/off`` (any case) for booleans,
decimal text for numbers. Programmatic overrides (tests, ``gpubot demo``) are read like the
environment.

Two values have a structure of their own and are read here too, so the settings check them
without importing the watch that uses them: a route's namespace label selector and the quiet
hours window.

Errors say the key and what was expected, and describe a bad value only by its kind and length,
never by its text: a token pasted into the wrong key must not reach a terminal or a log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.errors import ConfigError
from bot.kube.selectors import LabelRequirement, SelectorError, parse_label_selector
from bot.yamlio.marks import YamlInputError, load_yaml

#: the environment spellings of a boolean (compared lower-cased, stripped)
ENV_TRUE = frozenset({"1", "true", "yes", "on"})
ENV_FALSE = frozenset({"0", "false", "no", "off"})


def describe(value: Any) -> str:
    """What a value is, without showing it: ``text of 4 characters``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"text of {len(value)} character{'' if len(value) == 1 else 's'}"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _bad(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"setting {key}: expected {expected}, got {describe(value)}")


def as_bool(key: str, value: Any, *, text_ok: bool) -> bool:
    """A real boolean; from text (``text_ok``) one of ``ENV_TRUE`` / ``ENV_FALSE`` only."""
    if isinstance(value, bool):
        return value
    if text_ok and isinstance(value, str):
        word = value.strip().lower()
        if word in ENV_TRUE:
            return True
        if word in ENV_FALSE:
            return False
        raise _bad(key, "true or false (or 1/0, yes/no, on/off)", value)
    raise _bad(key, "true or false", value)


def as_int(key: str, value: Any, *, text_ok: bool) -> int:
    """A whole number (``2.0`` is 2; ``2.5``, ``true`` and, from a file, ``"2"`` are refused)."""
    if isinstance(value, bool):
        raise _bad(key, "a whole number", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if text_ok and isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _bad(key, "a whole number", value)


def as_float(key: str, value: Any, *, text_ok: bool) -> float:
    """A finite number; from text (``text_ok``) decimal text."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif text_ok and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise _bad(key, "a number", value)
    return number


def as_text(key: str, value: Any) -> str:
    """Text; a number, a list, a mapping or null is refused (``namespace: [a]`` is a mistake)."""
    if not isinstance(value, str):
        raise _bad(key, "text", value)
    return value


def as_text_list(key: str, value: Any, *, what: str) -> tuple[str, ...]:
    """A list of non-empty texts; a single text is refused, never split into characters."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _bad(key, f"a list of {what}", value)
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _bad(key, f"a list of {what}", item)
    return tuple(item.strip() for item in value)


def as_text_map(key: str, value: Any, *, what: str) -> dict[str, str]:
    """A mapping of text to text (``channel_clusters``, ``ssh_targets``)."""
    if not isinstance(value, Mapping):
        raise _bad(key, f"a mapping of {what}", value)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int) or isinstance(v, bool):
            raise _bad(f"{key}[{k}]", "text", v)
        out[str(k)] = str(v)
    return out


def coerce(key: str, value: Any, default: Any, *, text_ok: bool) -> Any:
    """``value`` as the type of ``default`` (bool, int, float or str); other defaults pass it on."""
    if isinstance(default, bool):
        return as_bool(key, value, text_ok=text_ok)
    if isinstance(default, int):
        return as_int(key, value, text_ok=text_ok)
    if isinstance(default, float):
        return as_float(key, value, text_ok=text_ok)
    if isinstance(default, str):
        return as_text(key, value)
    return value


def read_yaml_file(path: str, where: str) -> Any:
    """A user's YAML file (settings, kubeconfig) with the bounded loader; ``ConfigError`` starting
    with ``where`` (``config file PATH``) for an unreadable file or bad YAML (with its line)."""
    try:
        return load_yaml(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    except YamlInputError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None


def route_selector(text: str) -> tuple[LabelRequirement, ...]:
    """A watch route's ``namespace_selector``: a label selector in the API's text form, read by
    ``bot.kube.selectors``; ``ConfigError`` for text the API would refuse, or for none at all."""
    try:
        requirements = parse_label_selector(text)
    except SelectorError:
        raise ConfigError(
            f"namespace_selector: cannot read {text.strip()[:60]!r} (use k=v, k!=v, k, !k, k in (a,b))"
        ) from None
    if not requirements:
        raise ConfigError("namespace_selector: empty")
    return requirements


# -- quiet hours: a daily window in which the watch holds back new posts that are not critical.
# ``"22:00-07:00"`` in a named time zone (``Europe/Berlin``; default UTC) spans midnight; a window
# whose start equals its end is refused (all day or never is better said by ``enabled``). The
# severity that still posts is the finding catalogue's (``runbooks/findings.yaml``): a critical
# problem wakes people, a warning waits for the morning.

_SPAN = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
#: severities that post even in quiet hours
LOUD = frozenset({"critical"})


@dataclass(frozen=True)
class QuietHours:
    """A daily span in a time zone during which proactive posts wait, parsed once from the settings
    so a typo is a configuration error at start-up and not a silent always-on."""

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
