"""What a diagnosis was built from is kept to the exit only by the one-shot ``gpubot`` process
(``bot.exit_heap``): there it is dropped with the heap instead of being freed before the answer is
printed; the long-running bot frees it on the event loop's turn after the caller has the answer."""

from __future__ import annotations

import asyncio
import gc
import weakref
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot import exit_heap
from bot.commands import parse_invocation
from bot.engine.facts import Facts
from bot.service import Service
from bot.sim.cluster import SimCluster
from tests.interpreter import run_json

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "zombie-checkpoint.yaml"


@dataclass
class _Diagnosed:
    """The Facts one diagnosis made (weak references), and which were alive as the caller got the
    report and a turn of the loop later."""

    made: list[weakref.ref[Facts]]
    alive_on_return: list[bool]
    alive_a_turn_later: list[bool]


async def _facts_of_one_diagnosis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _Diagnosed:
    made: list[weakref.ref[Facts]] = []
    real_init = Facts.__init__

    def init(self: Facts, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(weakref.ref(self))

    monkeypatch.setattr(Facts, "__init__", init)
    async with SimCluster.from_file(SCENARIO, workdir=tmp_path) as sim:
        service = Service(sim.settings())
        try:
            report = await service.run(parse_invocation(["node-status"]))
            on_return = [ref() is not None for ref in made]
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            gc.collect()
            a_turn_later = [ref() is not None for ref in made]
        finally:
            await service.close()
    assert report.nodes, "the diagnosis ran"
    gc.collect()
    return _Diagnosed(made, on_return, a_turn_later)


async def test_the_long_running_bot_frees_what_an_answer_was_built_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exit_heap, "_kept", None)
    made = (await _facts_of_one_diagnosis(tmp_path, monkeypatch)).made
    assert made and all(ref() is None for ref in made)


async def test_the_long_running_bot_frees_it_after_the_caller_has_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not while the diagnosis returns (the asker would wait for the freeing): the caller resumes
    with the facts still alive, and they go on the loop's next turn."""
    monkeypatch.setattr(exit_heap, "_kept", None)
    diagnosed = await _facts_of_one_diagnosis(tmp_path, monkeypatch)
    assert diagnosed.alive_on_return == [True] and diagnosed.alive_a_turn_later == [False]


async def test_a_process_that_asked_keeps_it_to_its_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exit_heap, "_kept", None)
    exit_heap.keep_until_exit()
    made = (await _facts_of_one_diagnosis(tmp_path, monkeypatch)).made
    assert made and all(ref() is not None for ref in made)
    assert [ref() for ref in made] == [k for k in exit_heap._kept or [] if isinstance(k, Facts)]


def _kept_after(entry: str, *argv: str) -> bool:
    """Whether ``bot.exit_heap`` keeps what an answer was built from once ``cli.<entry>`` has run
    ``gpubot ARGV`` in a fresh interpreter (the exit itself replaced by a report of that)."""
    script = (
        "import json, sys\n"
        "from bot import cli, exit_heap\n"
        f"sys.argv = ['gpubot', *{list(argv)!r}]\n"
        "cli._flush_and_exit = lambda code: None\n"
        f"cli.{entry}() if {entry!r} == 'run' else cli.main(sys.argv[1:])\n"
        "sys.stdout = sys.__stdout__\n"
        "print(json.dumps(exit_heap._kept is not None))\n"
    )
    return bool(run_json(script))


def test_only_a_one_shot_diagnosis_of_the_gpubot_process_keeps_it() -> None:
    """``gpubot why-pending`` keeps it (the process ends with ``os._exit``); a command that is not a
    diagnosis (``serve`` among them) and an in-process caller (``main``: tests) never do."""
    diagnosis = ("node-status", "--scenario", str(SCENARIO), "--json")
    assert _kept_after("run", *diagnosis)
    assert not _kept_after("main", *diagnosis)
    assert not _kept_after("run", "runbook", "list")
