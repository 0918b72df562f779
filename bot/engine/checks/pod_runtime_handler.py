"""The container runtime handler or RuntimeClass a GPU pod needs is missing, or the pod names none.

Three cases, one cause family: the node's runtime has no handler of that name (every sandbox
fails: ``no runtime for "nvidia" is configured``), the API has no such RuntimeClass (the pod is
refused at creation, so only its controller's FailedCreate says so), or the GPU stack runs its own
pods with a RuntimeClass (the nvidia runtime is not the node's default) while this GPU pod names
none and its container finds no driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import event_time
from bot.engine.facts import Facts
from bot.kube.objects import Obj, meta_of
from bot.kube.pod_status import classify
from bot.kube.resources import pod_gpu_requests
from bot.kube.runtime_class import NO_DRIVER, RuntimeRefusal, parse, stack_runtime_class
from bot.kube.workload import replica_failure


class RuntimeProblem(TypedDict):
    pod: str
    runtime: str
    node: str
    namespace: str


RUNTIME_HANDLER_MISSING = Code("RUNTIME_HANDLER_MISSING", RuntimeProblem)
RUNTIME_CLASS_MISSING = Code("RUNTIME_CLASS_MISSING", RuntimeProblem)
RUNTIME_CLASS_NOT_SET = Code("RUNTIME_CLASS_NOT_SET", RuntimeProblem)



def _state_messages(pod: Obj) -> list[tuple[str, str]]:
    """(container, message) of every waiting or terminated state, current and last."""
    out = []
    status = pod.get("status") or {}
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        for state in (cs.get("state") or {}, cs.get("lastState") or {}):
            for kind in ("waiting", "terminated"):
                message = str((state.get(kind) or {}).get("message") or "")
                if message:
                    out.append((str(cs.get("name")), message))
    return out


def _refusal(facts: Facts) -> tuple[RuntimeRefusal, str] | None:
    """The newest runtime refusal on the pod or its owners, with the line that shows it."""
    t = facts.target
    for event in sorted(facts.events.pod + facts.events.owners, key=event_time, reverse=True):
        message = str(event.get("message") or "")
        found = parse(message)
        if found is not None:
            obj = event.get("involvedObject") or {}
            count = f" (x{event.get('count')})" if event.get("count") else ""
            return found, f"{obj.get('kind')}/{obj.get('name')} {event.get('reason')}{count}: {message[:600]}"
    for container, message in _state_messages(t.pod or {}):
        found = parse(message)
        if found is not None:
            return found, f"container {container}: {message[:600]}"
    for owner in t.owners:
        failure = replica_failure(owner) or ""
        found = parse(failure)
        if found is not None:
            name = meta_of(owner).get("name")
            return found, f"{owner.get('kind')}/{name} condition ReplicaFailure: {failure[:600]}"
    return None


def run(facts: Facts) -> Iterator[Detection]:
    """RUNTIME_HANDLER_MISSING, RUNTIME_CLASS_MISSING or RUNTIME_CLASS_NOT_SET."""
    t = facts.target
    if not t.kind or not t.namespace_exists:
        return
    pod = t.pod
    if pod is not None:
        state = classify(pod)
        if state.display_status == "Running" and state.ready:
            return
    where = f"{t.namespace}/{t.name}"
    subject = f"{t.kind.lower()}/{t.namespace}/{t.name}"
    found = _refusal(facts)
    node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
    asked = str(((pod or {}).get("spec") or {}).get("runtimeClassName") or "")
    if found is not None:
        refusal, line = found
        evidence = [line]
        if asked:
            evidence.append(f"{where} asks for runtimeClassName {asked}")
        code = RUNTIME_HANDLER_MISSING if refusal.kind == "handler" else RUNTIME_CLASS_MISSING
        yield code.detect(
            subject,
            {
                "pod": where,
                "runtime": refusal.name,
                "node": node or "?",
                "namespace": t.namespace,
            },
            evidence=evidence,
        )
        return
    if pod is None or asked or not pod_gpu_requests(pod):
        return
    runtime, stack = stack_runtime_class(facts.components.controllers)
    if not runtime:
        return
    lost = [(c, m) for c, m in _state_messages(pod) if NO_DRIVER.search(m)]
    if not lost:
        return
    evidence = [f"container {c}: {m[:500]}" for c, m in lost[:3]]
    evidence.append(f"{stack} runs its pods with runtimeClassName {runtime}; {where} sets no runtimeClassName")
    yield RUNTIME_CLASS_NOT_SET.detect(
        subject,
        {
            "pod": where,
            "runtime": runtime,
            "node": node or "?",
            "namespace": t.namespace,
        },
        evidence=evidence,
    )


CHECK = Check(
    name="pod.runtime_handler",
    reads=("target", "events", "components"),
    emits=(RUNTIME_HANDLER_MISSING, RUNTIME_CLASS_MISSING, RUNTIME_CLASS_NOT_SET),
    run=run,
)
