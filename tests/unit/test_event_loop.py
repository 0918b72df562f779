"""``gpubot serve``'s event loop: uvloop where installed, asyncio's when asked or where it is not.

The replica tests (tests/replicas) run real ``gpubot serve`` processes on the loop chosen here.
"""

from __future__ import annotations

import importlib.util

import pytest

from bot import event_loop
from bot.errors import ConfigError
from bot.settings import load_settings


async def _name() -> str:
    return event_loop.running_loop_name()


def test_auto_runs_on_uvloop_where_it_is_installed_and_asyncio_when_asked() -> None:
    assert importlib.util.find_spec("uvloop") is not None  # a runtime dependency (pyproject.toml)
    assert event_loop.chosen("auto") == "uvloop"
    assert event_loop.run(_name()) == "uvloop"
    assert event_loop.run(_name(), "asyncio") == "asyncio"


def test_without_uvloop_auto_falls_back_and_an_explicit_uvloop_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a))
    assert event_loop.run(_name()) == "asyncio"
    coro = _name()
    with pytest.raises(ConfigError, match="uvloop is not installed"):
        event_loop.run(coro, "uvloop")
    assert coro.cr_frame is None  # closed, not left to warn that it was never awaited


def test_the_setting_takes_only_the_three_values() -> None:
    assert load_settings(env={"GPUBOT_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    with pytest.raises(ConfigError, match="event_loop: 'tokio' is not 'auto', 'uvloop' or 'asyncio'"):
        load_settings(env={"GPUBOT_EVENT_LOOP": "tokio"})
