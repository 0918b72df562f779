"""Does the asked pod or workload exist; if not, is it the namespace or the object, and close names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.facts import Facts


class PodNotFound(TypedDict):
    what: str
    pod: str
    namespace: str


POD_NOT_FOUND = Code("POD_NOT_FOUND", PodNotFound)


def run(facts: Facts) -> Iterator[Detection]:
    """POD_NOT_FOUND, saying whether the namespace or the object is missing."""
    t = facts.target
    if not t.kind or (t.namespace_exists and (t.pod is not None or t.workload is not None)):
        return
    what = f"namespace {t.namespace}" if not t.namespace_exists else f"{t.kind.lower()} {t.namespace}/{t.name}"
    evidence = [f"did you mean: {', '.join(t.suggestions)}"] if t.suggestions else []
    yield POD_NOT_FOUND.detect(
        f"{t.kind.lower()}/{t.namespace}/{t.name}",
        {
            "what": what,
            "pod": t.name,
            "namespace": t.namespace,
        },
        evidence=evidence,
    )


CHECK = Check(name="pod.lookup", reads=("target",), emits=(POD_NOT_FOUND,), run=run)
