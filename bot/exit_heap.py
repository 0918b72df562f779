"""What an answer was built from, freed after the asker has the answer rather than before.

Why: a cold diagnosis of a large cluster is built from hundreds of MB of parsed API objects
(10,000 nodes: millions of dicts and strings), and freeing them object by object when the
diagnosis returned cost the answer 0.17-0.18 s before it was printed (measured by
``bench.bench_why_pending``'s size of 10,000 nodes). The ``gpubot`` process ends with ``os._exit``
(``bot.cli.run``), which drops the heap whole, so a one-shot diagnosis there turns keeping on
(``bot.cli``'s diagnose command). ``gpubot serve`` never does: there what a diagnosis read is
freed on the event loop's next turn, once the caller has the report (a node-status over 500 nodes
took 6-7 ms to free its readings, which the asker waited for when they were freed on return).
"""

from __future__ import annotations

import asyncio

_kept: list[object] | None = None


def keep_until_exit() -> None:
    """From now on, ``spent`` keeps what it is given: call only where the process ends after one
    answer without freeing its heap (a one-shot diagnosis of the ``gpubot`` process, never serve)."""
    global _kept
    if _kept is None:
        _kept = []


def spent(obj: object) -> None:
    """``obj`` is no longer needed once the answer is made: kept to the exit where the process has
    asked for that; else, on a running event loop, held until the loop's next turn (called as the
    answer is returned, it is freed after the caller has it, not before)."""
    if _kept is not None:
        _kept.append(obj)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop: freed as usual
    loop.call_soon(_let_go, obj)


def _let_go(obj: object) -> None:
    """The loop's call holds ``obj``; it goes when the call is done."""
