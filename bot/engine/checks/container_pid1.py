"""PID 1 is an interactive shell: leaving the session can end the container's main process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._container import label
from bot.engine.facts import Facts


class Pid1Shell(TypedDict):
    pod: str
    container: str
    comm: str


PID1_SHELL = Code("PID1_SHELL", Pid1Shell)


def run(facts: Facts) -> Iterator[Detection]:
    """PID1_SHELL when /proc/1/comm is one of the runbook's shells."""
    ex = facts.containers
    shells = {str(r.get("comm", "")).strip() for r in facts.table("shells")}
    if ex is None:
        return
    for view in ex.containers:
        if view.pid1 and view.pid1 in shells:
            yield PID1_SHELL.detect(
                f"pod/{ex.namespace}/{ex.pod}",
                {
                    "pod": label(ex, view),
                    "container": view.container,
                    "comm": view.pid1,
                },
                evidence=[f"{view.container}: /proc/1/comm is {view.pid1}"],
            )


CHECK = Check(name="container.pid1", reads=("containers",), emits=(PID1_SHELL,), run=run, tables=("shells",))
