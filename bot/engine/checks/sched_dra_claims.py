"""A pod waits for its DRA ResourceClaims (resource.k8s.io): not allocated, or not created yet.

Read from what is cheap and always there: the pod's ``spec.resourceClaims`` and
``status.resourceClaimStatuses``, and the scheduler's or kubelet's words. Where the cluster serves
resource.k8s.io, the claims, DeviceClasses and ResourceSlices (``facts.queues.dra``) sharpen it:
no ResourceSlice from the class's driver (its kubelet plugin runs nowhere) is
DRA_NO_DEVICES_PUBLISHED; the class's and the request's CEL selectors are evaluated against every
published device (``bot.kube.dra_cel``, or "could not evaluate this selector", never a guess):
none matching is DRA_SELECTOR_NO_MATCH; every matching device allocated to other claims is
DRA_DEVICES_EXHAUSTED, or DRA_CLAIM_STALE_RESERVATION when a holder is reserved for a pod that is
gone; otherwise the claims' state is evidence of DRA_CLAIM_PENDING.
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
    ClaimRequest,
    allocated_by,
    allocated_devices,
    claim_requests,
    class_drivers,
    class_selectors,
    devices_by_node,
    is_allocated,
    select,
)
from bot.kube.dra_plugins import allocated_drivers, allocated_nodes, for_driver, state_on, unregistered_driver
from bot.kube.objects import Obj, meta_of, namespace_of
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
    #: DRA_SELECTOR_NO_MATCH: the selector no published device passes
    selector: NotRequired[str]
    #: DRA_CLAIM_STALE_RESERVATION: the claim reserved for pods that are gone, and those pods
    holder: NotRequired[str]
    gone: NotRequired[str]


class DraDevices(DraSlices):
    pod: str
    namespace: str


class _PluginWhere(TypedDict):
    name: str
    driver: str
    plugin: str
    node: str
    state: str


class DraPlugin(_PluginWhere):
    pod: str
    namespace: str


DRA_CLAIM_PENDING = Code("DRA_CLAIM_PENDING", DraClaimPending)
DRA_NO_DEVICES_PUBLISHED = Code("DRA_NO_DEVICES_PUBLISHED", DraDevices)
DRA_DEVICES_EXHAUSTED = Code("DRA_DEVICES_EXHAUSTED", DraDevices)
DRA_SELECTOR_NO_MATCH = Code("DRA_SELECTOR_NO_MATCH", DraDevices)
DRA_CLAIM_STALE_RESERVATION = Code("DRA_CLAIM_STALE_RESERVATION", DraDevices)
DRA_DRIVER_PLUGIN_NOT_READY = Code("DRA_DRIVER_PLUGIN_NOT_READY", DraPlugin)

MAX_ROWS = 8
#: what the device story concludes: the code, its parameters (without the pod's), the evidence
Story = tuple[Code[DraDevices] | None, DraSlices | None, list[str]]


def _plugin_down(
    dra: DraFacts, pod: Obj, claims: list[PodClaim], event: str, story: Story | None
) -> tuple[_PluginWhere, list[str]] | None:
    """The kubelet plugin of the driver a claim needs, missing or not ready where it is needed: on
    the node the pod is bound to (or its claims are allocated on), or, when the driver publishes
    no device at all, on every node it should run on."""
    nodes, drivers = set(), set()
    if (pod.get("spec") or {}).get("nodeName"):
        nodes.add(str(pod["spec"]["nodeName"]))
    for pc in claims:
        claim = dra.claims.get(pc.claim)
        if claim is not None:
            nodes |= allocated_nodes(claim)
            drivers |= allocated_drivers(claim)
    if unregistered_driver(event):
        drivers = {unregistered_driver(event)}
    unpublished = story is not None and story[0] == DRA_NO_DEVICES_PUBLISHED
    if unpublished and story is not None and story[1] is not None:
        drivers = {story[1]["driver"]}
    elif not nodes:
        return None
    names = ", ".join(c.claim or c.name for c in claims[:4])
    for driver in sorted(drivers):
        for ds in for_driver(dra.plugin_sets, driver):
            meta = meta_of(ds)
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            pods = dra.plugin_pods.get(key, [])
            status = ds.get("status") or {}
            line = (f"DaemonSet {key}: {status.get('numberReady', 0)} of {status.get('desiredNumberScheduled', 0)} "
                    "pods ready")
            for node in sorted(nodes):
                state, detail = state_on(pods, node)
                if state != "ready":
                    where: _PluginWhere = {"driver": driver, "plugin": key, "name": names, "node": node, "state": state}
                    return where, [line, f"on {node}: {detail}"]
            if unpublished and not any(state_on(pods, str((p.get("spec") or {}).get("nodeName")))[0] == "ready"
                                       for p in pods):
                shown = "; ".join(state_on(pods, str((p.get("spec") or {}).get("nodeName")))[1] for p in pods[:4])
                state = "not ready on any node" if pods else "missing (the DaemonSet has no pod)"
                anywhere: _PluginWhere = {"driver": driver, "plugin": key, "name": names, "node": "any node",
                                          "state": state}
                return anywhere, [line, shown or state]
    return None


def _one_line(expression: str) -> str:
    return " ".join(expression.split())


def _story(dra: DraFacts, claims: list[PodClaim]) -> Story | None:
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
            lines += [f"DeviceClass {req.device_class} selector: {_one_line(sel)}" for sel in class_selectors(dc)]
            lines += [f"request {req.name} selector: {_one_line(sel)}" for sel in req.selectors]
            drivers = class_drivers(dc)
            for driver in sorted(drivers):
                published = devices_by_node(dra.slices, driver)
                if not sum(published.values()):
                    lines += [f"ResourceSlice of {driver} on {node}: no devices listed" for node in sorted(published)]
                    if not published:
                        lines.append(f"no ResourceSlice from driver {driver} on any node ({len(dra.slices)} in all)")
                    params: DraSlices = {"name": pc.claim, "value": req.device_class, "driver": driver}
                    return DRA_NO_DEVICES_PUBLISHED, params, lines
            found = _devices(dra, pc.claim, req, drivers, [*class_selectors(dc), *req.selectors], lines)
            if found is not None:
                return found
    return (None, None, lines) if lines else None


def _devices(
    dra: DraFacts, claim: str, req: ClaimRequest, drivers: set[str], selectors: list[str], lines: list[str]
) -> Story | None:
    """What the selectors leave of the published devices, and who holds those: the finding, or None
    (lines gain the evidence either way)."""
    driver = ", ".join(sorted(drivers)) or "any driver"
    params: DraSlices = {"name": claim, "value": req.device_class, "driver": driver}
    chosen = select(dra.slices, drivers, selectors)
    if chosen.unevaluated:
        # never guess: count the driver's devices as before, and say the selector was not evaluated
        lines += [f"could not evaluate this selector: {_one_line(e)} ({why}); the counts below are every device "
                  f"of {driver}"
                  for e, why in chosen.unevaluated]
        return _exhausted_by_driver(dra, req, drivers, params, lines)
    total = sum(len(devs) for devs in select(dra.slices, drivers, []).by_node.values())
    rows = [f"{node}: {len(devs)} device(s) match the selectors" for node, devs in sorted(chosen.by_node.items())]
    lines += rows[:MAX_ROWS]
    if chosen.count == 0 and total:
        lines += [f"selector alone lets {n} of {total} device(s) through: {_one_line(e)}"
                  for e, n in chosen.passing.items()]
        lines += [f"devices published: {seen}" for seen in chosen.seen[:4]]
        rejecting = [e for e, n in chosen.passing.items() if n == 0] or list(chosen.passing)
        return DRA_SELECTOR_NO_MATCH, {**params, "selector": _one_line(rejecting[0]), "count": str(total)}, lines
    held = allocated_devices(dra.all_claims)
    mine = [k for devs in chosen.by_node.values() for k in devs]
    holders: dict[str, int] = {}
    for key in mine:
        if key in held:
            holders[held[key]] = holders.get(held[key], 0) + 1
    lines += [f"  allocated to claim {c}: {n}" for c, n in sorted(holders.items())][:MAX_ROWS]
    free = len(mine) - sum(holders.values())
    if not mine or free >= req.count:
        return None
    count = f"{sum(holders.values())} of {len(mine)} allocated, it asks {req.count}"
    stale = sorted(c for c in holders if c in dra.gone_reservations)
    lines += [f"  could not check who reserves {c}: {why}" for c, why in sorted(dra.unchecked_reservations.items())
              if c in holders][:MAX_ROWS]
    if stale:
        gone = ", ".join(dra.gone_reservations[stale[0]])
        lines += [f"ResourceClaim {c} is reserved for pod(s) that no longer exist: "
                  f"{', '.join(dra.gone_reservations[c])}" for c in stale]
        return DRA_CLAIM_STALE_RESERVATION, {**params, "count": count, "holder": stale[0], "gone": gone}, lines
    return DRA_DEVICES_EXHAUSTED, {**params, "count": count}, lines


def _exhausted_by_driver(
    dra: DraFacts, req: ClaimRequest, drivers: set[str], params: DraSlices, lines: list[str]
) -> Story | None:
    for driver in sorted(drivers):
        published = devices_by_node(dra.slices, driver)
        total = sum(published.values())
        held = allocated_by(dra.all_claims, driver)
        lines += [f"{node}: {n} device(s) published by {driver}" for node, n in sorted(published.items())][:MAX_ROWS]
        lines += [f"  allocated to claim {c}: {n}" for c, n in sorted(held.items())][:MAX_ROWS]
        if total and sum(held.values()) + req.count > total:
            count = f"{sum(held.values())} of {total} allocated, it asks {req.count}"
            return DRA_DEVICES_EXHAUSTED, {**params, "driver": driver, "count": count}, lines
    return None


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
    if story is not None and dra is not None and dra.plugins_unread:
        story[2].append(f"could not read the DRA drivers' kubelet-plugin pods: {dra.plugins_unread}")
    ns = namespace_of(pod)
    if dra is not None and dra.version:
        down = _plugin_down(dra, pod, claims, found[2] if found else "", story)
        if down is not None:
            where, lines = down
            evidence = [*([found[2]] if found else []), *lines, *(story[2] if story else [])]
            yield DRA_DRIVER_PLUGIN_NOT_READY.detect(pod_subject(pod), {"pod": pod_ref(pod), "namespace": ns, **where},
                                                     evidence=evidence)
            return
    code, slices, lines = story or (None, None, [])
    if code is not None and slices is not None:
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
            "namespace": ns,
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
    emits=(DRA_CLAIM_PENDING, DRA_NO_DEVICES_PUBLISHED, DRA_DEVICES_EXHAUSTED, DRA_SELECTOR_NO_MATCH,
           DRA_CLAIM_STALE_RESERVATION, DRA_DRIVER_PLUGIN_NOT_READY),
    run=run,
)
