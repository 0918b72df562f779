"""The benchmark's runs in turns: every procedure its own number of times, none in a block."""

from __future__ import annotations

from collections.abc import Callable

from bench.common import in_turns


def test_procedures_take_turns_and_each_runs_its_own_number_of_times() -> None:
    calls: list[str] = []

    def run(name: str) -> Callable[[], str]:
        def one() -> str:
            calls.append(name)
            return f"{name}{calls.count(name)}"

        return one

    out = in_turns({"cli": (3, run("cli")), "floor": (2, run("floor")), "kubectl": (0, run("kubectl"))})
    assert calls == ["cli", "floor", "cli", "floor", "cli"]
    assert out == {"cli": ["cli1", "cli2", "cli3"], "floor": ["floor1", "floor2"], "kubectl": []}
    assert in_turns({}) == {}
