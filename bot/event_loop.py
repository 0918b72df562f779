"""The event loop ``gpubot serve`` runs on: uvloop where it is installed, asyncio's own otherwise.

Why: the serving process's event loop carries every Slack ack and, in a fleet-wide node-status
through the node agent, one exec connection per node (a connect, an upgrade, a few frames, a
close). On uvloop the loop's own machinery is C: 500 execs of the node read cost the bot ~0.20
CPU-seconds against ~0.25-0.29 on asyncio's loop, and node-status over 500 agents took 0.85 s
against 0.88-0.93 s (bench/bench_node_status.py, alternating runs on one machine). Nothing in
gpubot needs either loop: asyncssh, aiohttp and Slack Bolt run on both, the tests run the service
on asyncio's loop and the replica tests run real ``gpubot serve`` processes on this one.

The one-shot commands stay on asyncio's loop: a single diagnosis does not win back what importing
uvloop costs a cold process. The ``event_loop`` setting (``GPUBOT_EVENT_LOOP``) picks serve's.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any, TypeVar

from bot.errors import ConfigError

_T = TypeVar("_T")


def chosen(setting: str) -> str:
    """``uvloop`` or ``asyncio``: the loop the ``event_loop`` setting asks for on this machine;
    ``ConfigError`` when it names uvloop and uvloop is not installed."""
    installed = importlib.util.find_spec("uvloop") is not None
    if setting == "uvloop" and not installed:
        raise ConfigError("setting event_loop: uvloop is not installed (pip install uvloop, or use 'auto')")
    if setting == "asyncio" or not installed:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, _T], setting: str = "auto") -> _T:
    """Run ``main`` to completion on the loop ``chosen(setting)``."""
    try:
        loop = chosen(setting)
    except ConfigError:
        main.close()  # never awaited: say nothing about it but the error
        raise
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def running_loop_name() -> str:
    """The package the running loop comes from (``uvloop``, ``asyncio``), for logs and reports."""
    return type(asyncio.get_running_loop()).__module__.split(".")[0]
