"""A measuring run waits for a quiet machine before each benchmark, and never for long
(``bench.run_all.settle``): a suite started right after the test suite measured its first
benchmark on a busy machine."""

from __future__ import annotations

from bench.run_all import QUIET_LOAD_PER_CORE, settle


class _Machine:
    """A load average that falls by ``step`` at every pause, on a clock the pauses move."""

    def __init__(self, load: float, step: float) -> None:
        self.load, self.step, self.now, self.pauses = load, step, 0.0, 0

    def getloadavg(self) -> tuple[float, float, float]:
        return (self.load, self.load, self.load)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.load -= self.step
        self.pauses += 1


def _settle(m: _Machine, limit_s: float = 90.0) -> float:
    return settle(cores=2, limit_s=limit_s, load=m.getloadavg, sleep=m.sleep, clock=lambda: m.now)


def test_a_busy_machine_is_waited_for_until_it_is_quiet() -> None:
    m = _Machine(load=1.9, step=0.2)
    waited = _settle(m)
    assert m.load <= QUIET_LOAD_PER_CORE * 2 < m.load + m.step  # the first quiet moment, no later
    assert waited == m.now > 0


def test_a_quiet_machine_starts_at_once() -> None:
    m = _Machine(load=0.3, step=0.2)
    assert _settle(m) == 0 and m.pauses == 0


def test_a_machine_that_stays_busy_costs_the_limit_only() -> None:
    m = _Machine(load=5.0, step=0.0)
    waited = _settle(m, limit_s=10.0)
    assert 10.0 <= waited <= 12.0 and m.load == 5.0
