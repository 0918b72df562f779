"""The node driver supports a lower CUDA than the container's torch was built for."""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection
from bot.engine.checks._container import chain_evidence, cuda_mismatch, label, node_driver
from bot.engine.checks.pod_cuda_driver import DRIVER_TOO_OLD
from bot.engine.facts import Facts


def run(facts: Facts) -> Iterator[Detection]:
    """DRIVER_TOO_OLD per container, with where the node's CUDA was read."""
    ex = facts.containers
    if ex is None:
        return
    for view in ex.containers:
        found = cuda_mismatch(facts, ex, view)
        if found is None or view.torch is None:
            continue
        cuda, source = found
        driver = node_driver(facts, ex, view)
        evidence = [f"node driver {driver} supports CUDA up to {cuda} ({source})",
                    f"{view.container}: torch {view.torch.version} was built for CUDA {view.torch.cuda}"]
        yield DRIVER_TOO_OLD.detect(
            f"pod/{ex.namespace}/{ex.pod}",
            {
                "pod": label(ex, view),
                "container": view.container,
                "node": ex.node or "?",
                "driver": driver,
                "driver_cuda": cuda,
                "container_cuda": view.torch.cuda,
            },
            evidence=evidence + chain_evidence(facts, ex, view),
        )


CHECK = Check(
    name="container.driver_cuda", reads=("containers", "node_readings"), emits=(DRIVER_TOO_OLD,), run=run
)
