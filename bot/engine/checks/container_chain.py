"""The whole verification chain of a container no named problem explains: OK, or what is broken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._container import chain_evidence, explained, label, unexplained_problems
from bot.engine.facts import Facts


class ContainerVerdict(TypedDict):
    pod: str
    container: str
    what: str


CONTAINER_GPU_OK = Code("CONTAINER_GPU_OK", ContainerVerdict)
CONTAINER_GPU_UNAVAILABLE = Code("CONTAINER_GPU_UNAVAILABLE", ContainerVerdict)


def run(facts: Facts) -> Iterator[Detection]:
    """CONTAINER_GPU_OK or CONTAINER_GPU_UNAVAILABLE, with the chain as evidence."""
    ex = facts.containers
    if ex is None:
        return
    for view in ex.containers:
        if explained(facts, ex, view):
            continue  # the named problem's finding carries the chain
        evidence = chain_evidence(facts, ex, view)
        subject = f"pod/{ex.namespace}/{ex.pod}"
        problems = unexplained_problems(view)
        if problems:
            yield CONTAINER_GPU_UNAVAILABLE.detect(
                subject,
                {
                    "pod": label(ex, view),
                    "container": view.container,
                    "what": "; ".join(problems),
                },
                evidence=problems + evidence,
            )
            continue
        t = view.torch
        what = (f"torch {t.version}, CUDA {t.cuda}, {t.device_count} device(s)" if t is not None
                else f"nvidia-smi works; torch not checked: {view.torch_problem}")
        yield CONTAINER_GPU_OK.detect(
            subject,
            {
                "pod": label(ex, view),
                "container": view.container,
                "what": what,
            },
            evidence=evidence,
        )


CHECK = Check(
    name="container.chain", reads=("containers",), emits=(CONTAINER_GPU_OK, CONTAINER_GPU_UNAVAILABLE), run=run
)
