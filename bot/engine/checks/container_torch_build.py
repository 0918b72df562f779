"""A CPU-only torch build: ``torch.version.cuda`` is None, so no GPU is ever used."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._container import chain_evidence, label, torch_cpu_build
from bot.engine.facts import Facts


class TorchCpuBuild(TypedDict):
    pod: str
    container: str


TORCH_CPU_BUILD = Code("TORCH_CPU_BUILD", TorchCpuBuild)


def run(facts: Facts) -> Iterator[Detection]:
    """TORCH_CPU_BUILD per container."""
    ex = facts.containers
    if ex is None:
        return
    for view in ex.containers:
        t = view.torch
        if t is None or not torch_cpu_build(view):
            continue
        first = (f"{view.container}: torch {t.version}, torch.version.cuda None, "
                 f"cuda.is_available() {t.available}, device_count {t.device_count}")
        yield TORCH_CPU_BUILD.detect(
            f"pod/{ex.namespace}/{ex.pod}",
            {
                "pod": label(ex, view),
                "container": view.container,
            },
            evidence=[first, *chain_evidence(facts, ex, view)],
        )


CHECK = Check(name="container.torch_build", reads=("containers",), emits=(TORCH_CPU_BUILD,), run=run)
