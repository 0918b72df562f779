"""Injected API faults: a matching request gets an error Status or a delay.

Scenarios list faults under ``api.faults`` and tests add them at run time, to prove that probes
retry 429s, survive 500s and time out on slow calls. Deterministic when ``rate`` is 1; a seeded
random decides otherwise, so a failing test replays. Faults never change the store.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from bot.sim.scenario import ApiFault


@dataclass
class _Armed:
    """A fault and how many more requests it may hit (None: every one), so a scenario can fail the
    first tries of a read and let the retry through."""

    fault: ApiFault
    left: int | None


class FaultSet:
    """The active faults, consulted once per request in order; the first match wins."""

    def __init__(self, faults: Iterable[ApiFault] = (), *, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._armed = [_Armed(f, f.times) for f in faults]
        #: (verb, path, status or None, delay_s) for every fault that fired
        self.fired: list[tuple[str, str, int | None, float]] = []

    def add(self, fault: ApiFault) -> None:
        with self._lock:
            self._armed.append(_Armed(fault, fault.times))

    def clear(self) -> None:
        with self._lock:
            self._armed.clear()

    def match(self, verb: str, path: str) -> ApiFault | None:
        """The fault this request triggers (consuming one of its ``times``), if any."""
        with self._lock:
            for armed in self._armed:
                f = armed.fault
                if armed.left is not None and armed.left <= 0:
                    continue
                if f.verb and f.verb.upper() != verb.upper():
                    continue
                if f.match not in path:
                    continue
                if f.rate < 1.0 and self._random.random() >= f.rate:
                    continue
                if armed.left is not None:
                    armed.left -= 1
                self.fired.append((verb, path, f.status, f.delay_s))
                return f
        return None
