"""GPU requests that can never work as written: mixed nvidia.com/gpu + qGPU, cpu/memory of '0',
qGPU values qGPU rejects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.facts import Facts
from bot.kube.resources import spec_problems


class SpecProblem(TypedDict):
    pod: str
    container: str
    what: str


SPEC_MIXED_GPU_RESOURCES = Code("SPEC_MIXED_GPU_RESOURCES", SpecProblem)
SPEC_ZERO_CPU_MEMORY = Code("SPEC_ZERO_CPU_MEMORY", SpecProblem)
SPEC_QGPU_INVALID = Code("SPEC_QGPU_INVALID", SpecProblem)
#: bot.kube names the problem by its code (it imports nothing of the engine)
_BY_NAME = {str(c): c for c in (SPEC_MIXED_GPU_RESOURCES, SPEC_ZERO_CPU_MEMORY, SPEC_QGPU_INVALID)}


def run(facts: Facts) -> Iterator[Detection]:
    """One finding per problem and container."""
    pod = facts.pod
    if pod is None:
        return
    for problem in spec_problems(pod):
        yield _BY_NAME[problem.code].detect(
            pod_subject(pod),
            {
                "pod": pod_ref(pod),
                "container": problem.container,
                "what": problem.detail,
            },
            evidence=[f"container {problem.container}: {problem.detail}"],
        )


CHECK = Check(
    name="spec.resources",
    reads=("pod",),
    emits=(SPEC_MIXED_GPU_RESOURCES, SPEC_ZERO_CPU_MEMORY, SPEC_QGPU_INVALID),
    run=run,
)
