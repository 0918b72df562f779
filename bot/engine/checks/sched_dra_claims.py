"""A pod waits for its DRA ResourceClaims (resource.k8s.io): not allocated, or not created yet.

Read from what is cheap and always there: the pod's ``spec.resourceClaims`` and
``status.resourceClaimStatuses``, and the scheduler's or kubelet's words. The claims'
DeviceClass and the drivers' ResourceSlices are not read here (issue 32 reads them); the finding
says how to look, and names a DeviceClass when the message does.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import event_time, pod_ref
from bot.engine.facts import Facts
from bot.kube.dra import pod_claims, why
from bot.kube.pod_status import classify


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
    if found is None:
        return
    reason, device_class, line = found
    evidence = [line]
    evidence += [f"pod claim {c.name}: {c.source}" for c in claims[:6]]
    names = ", ".join(c.claim or c.name for c in claims[:4])
    yield detect(
        "DRA_CLAIM_PENDING",
        pod_subject(pod),
        role=reason,
        pod=pod_ref(pod),
        namespace=str((pod.get("metadata") or {}).get("namespace") or ""),
        name=names,
        what=", ".join(c.source for c in claims[:3]),
        value=device_class or "not read by gpubot (the claim's spec.devices names it)",
        evidence=evidence,
    )


CHECK = Check(name="sched.dra_claims", reads=("pod", "events"), emits=("DRA_CLAIM_PENDING",), run=run)
