"""A pod waits for its DRA ResourceClaims (resource.k8s.io): not allocated, or not created yet.

Read from what is cheap and always there: the pod's ``spec.resourceClaims`` and
``status.resourceClaimStatuses``, and the scheduler's or kubelet's words. Where the cluster serves
resource.k8s.io, the claims, DeviceClasses and ResourceSlices (``facts.queues.dra``) sharpen it:
no ResourceSlice from the class's driver (its kubelet plugin runs nowhere) is
DRA_NO_DEVICES_PUBLISHED, every matching device allocated to other claims is
DRA_DEVICES_EXHAUSTED; otherwise the claims' state is evidence of DRA_CLAIM_PENDING.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NotRequired, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import event_time, pod_ref
from bot.engine.facts import Facts
from bot.engine.queue_facts import DraFacts
from bot.kube.dra import PodClaim, pod_claims, why
from bot.kube.dra_devices import (
    allocated_by,
    claim_requests,
    class_drivers,
    class_selectors,
    devices_by_node,
    is_allocated,
)
from bot.kube.pod_status import classify


class DraClaimPending(TypedDict):
    pod: str
    namespace: str
    name: str
    what: str
    value: str


class DraSlices(TypedDict):
    name: str
    value: str
    driver: str
    count: NotRequired[str]


class DraDevices(DraSlices):
    pod: str
    namespace: str


DRA_CLAIM_PENDING = Code("DRA_CLAIM_PENDING", DraClaimPending)
DRA_NO_DEVICES_PUBLISHED = Code("DRA_NO_DEVICES_PUBLISHED", DraDevices)
DRA_DEVICES_EXHAUSTED = Code("DRA_DEVICES_EXHAUSTED", DraDevices)

MAX_ROWS = 8


def _story(
    dra: DraFacts, claims: list[PodClaim]
) -> tuple[Code[DraDevices] | None, DraSlices | None, list[str]] | None:
    """(code, params, evidence) from the claims, classes and slices; None when they explain nothing more."""
    lines: list[str] = []
    for pc in claims:
        claim = dra.claims.get(pc.claim)
        if claim is None:
            continue
        if is_allocated(claim):
            lines.append(f"ResourceClaim {pc.claim}: allocated")
            continue
        for req in claim_requests(claim):
            lines.append(f"ResourceClaim {pc.claim}: request {req.name} wants {req.count} device(s) of class "
                         f"{req.device_class}; not allocated")
            dc = dra.device_classes.get(req.device_class)
            if dc is None:
                continue
            lines += [f"DeviceClass {req.device_class} selector: {sel}" for sel in class_selectors(dc)]
            for driver in sorted(class_drivers(dc)):
                published = devices_by_node(dra.slices, driver)
                params: DraSlices = {"name": pc.claim, "value": req.device_class, "driver": driver}
                if not sum(published.values()):
                    lines += [f"ResourceSlice of {driver} on {node}: no devices listed" for node in sorted(published)]
                    if not published:
                        lines.append(f"no ResourceSlice from driver {driver} on any node ({len(dra.slices)} in all)")
                    return DRA_NO_DEVICES_PUBLISHED, params, lines
                total = sum(published.values())
                held = allocated_by(dra.all_claims, driver)
                rows = [f"{node}: {n} device(s) published by {driver}" for node, n in sorted(published.items())]
                lines += rows[:MAX_ROWS]
                lines += [f"  allocated to claim {c}: {n}" for c, n in sorted(held.items())][:MAX_ROWS]
                if sum(held.values()) + req.count > total:
                    params["count"] = f"{sum(held.values())} of {total} allocated, it asks {req.count}"
                    return DRA_DEVICES_EXHAUSTED, params, lines
    return (None, None, lines) if lines else None


def run(facts: Facts) -> Iterator[Detection]:
    """DRA_CLAIM_PENDING with the claims, why the scheduler or kubelet waits, and the DeviceClass if named."""
    pod = facts.pod
    if pod is None:
        return
    claims = pod_claims(pod)
    if not claims:
        return
    state = classify(pod)
    if state.display_status == "Running" and state.ready:
        return
    found = None
    for event in sorted(facts.events.pod, key=event_time, reverse=True):
        message = str(event.get("message") or "")
        reason, device_class = why(message)
        if reason:
            source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or "event"
            found = (reason, device_class, f"{source} {event.get('reason')}: {message[:600]}")
            break
    dra = facts.queues.dra
    story = _story(dra, claims) if dra is not None and dra.version else None
    code, slices, lines = story or (None, None, [])
    if code is not None and slices is not None:
        ns = str((pod.get("metadata") or {}).get("namespace") or "")
        evidence = [*([found[2]] if found else []), *lines]
        yield code.detect(pod_subject(pod), {"pod": pod_ref(pod), "namespace": ns, **slices}, evidence=evidence)
        return
    if found is None:
        return
    reason, device_class, line = found
    evidence = [line, *lines]
    evidence += [f"pod claim {c.name}: {c.source}" for c in claims[:6]]
    names = ", ".join(c.claim or c.name for c in claims[:4])
    yield DRA_CLAIM_PENDING.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "namespace": str((pod.get("metadata") or {}).get("namespace") or ""),
            "name": names,
            "what": ", ".join(c.source for c in claims[:3]),
            "value": device_class or "not read by gpubot (the claim's spec.devices names it)",
        },
        role=reason,
        evidence=evidence,
    )


CHECK = Check(
    name="sched.dra_claims",
    reads=("pod", "events"),
    # the claims, DeviceClasses and ResourceSlices sharpen the answer; without them it still stands
    refines=("queues",),
    emits=(DRA_CLAIM_PENDING, DRA_NO_DEVICES_PUBLISHED, DRA_DEVICES_EXHAUSTED),
    run=run,
)
