"""What a one-shot process's answer was built from, kept until the process exits.

Why: a cold diagnosis of a large cluster is built from hundreds of MB of parsed API objects
(10,000 nodes: millions of dicts and strings), and freeing them object by object when the
diagnosis returned cost the answer 0.17-0.18 s before it was printed (measured by
``bench.bench_why_pending``'s size of 10,000 nodes). The ``gpubot`` process ends with ``os._exit``
(``bot.cli.run``), which drops the heap whole, so a one-shot diagnosis there turns keeping on
(``bot.cli``'s diagnose command); ``gpubot serve`` never does, and there what each diagnosis read
is freed as soon as it is answered.
"""

from __future__ import annotations

_kept: list[object] | None = None


def keep_until_exit() -> None:
    """From now on, ``spent`` keeps what it is given: call only where the process ends after one
    answer without freeing its heap (a one-shot diagnosis of the ``gpubot`` process, never serve)."""
    global _kept
    if _kept is None:
        _kept = []


def spent(obj: object) -> None:
    """``obj`` is no longer needed once the answer is made: kept to the exit where the process has
    asked for that, else left to be freed as usual."""
    if _kept is not None:
        _kept.append(obj)
