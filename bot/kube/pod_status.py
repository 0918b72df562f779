"""What state a pod is in, computed the way kubectl computes its STATUS column.

Users quote what ``kubectl get pods`` shows them, and the status table in the runbooks is keyed on
those words, so ``display_status`` mirrors kubectl's ``printPod`` exactly, while ``reason`` is the
stable key the diagnosis uses (``Unscheduled``, ``CrashLoopBackOff``, ``NotReady``, ``Evicted``…).

It never performs I/O and never reads logs; it only interprets ``status`` as the API reports it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import meta_of

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
NODE_LOST = "NodeLost"
#: the kubelet's waiting reason while it backs off restarting a container that keeps exiting
CRASH_LOOP = "CrashLoopBackOff"
#: reasons that mean a container keeps failing: a crash loop, a failed start, a kill
CRASH_REASONS = frozenset({CRASH_LOOP, "Error", "RunContainerError", "CreateContainerError",
                           "StartError", "ContainerCannotRun", "OOMKilled"})


@dataclass(frozen=True)
class PodState:
    """A pod's state in one place: what kubectl would show and what it means."""

    #: ``status.phase`` (``Unknown`` when absent)
    phase: str
    #: exactly what ``kubectl get pod`` prints in STATUS (``Init:0/1``, ``Running``, ``OOMKilled``…)
    display_status: str
    #: the diagnosis key: a container waiting/terminated reason, or one of ``Unscheduled``,
    #: ``SchedulingGated``, ``Pending``, ``Running``, ``NotReady``, ``Completed``, ``Error``,
    #: ``Evicted``, ``Terminating``, ``NodeLost``, ``Failed``, ``Unknown``
    reason: str
    #: the container the reason comes from, when one does
    container: str | None
    #: one line of explanation: the waiting message, exit code, last termination state
    detail: str
    #: ``metadata.deletionTimestamp`` is set
    terminating: bool
    #: the pod's Ready condition is True
    ready: bool
    #: ``spec.nodeName``: where it was scheduled, None when it was not
    node: str | None
    #: reason of the last termination of ``container`` (``OOMKilled`` under CrashLoopBackOff)
    last_reason: str | None = None
    #: exit code of the current or last termination of ``container``
    exit_code: int | None = None
    #: restarts summed over app containers (and restartable init containers)
    restarts: int = 0
    ready_containers: int = 0
    total_containers: int = 0


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _terminated_words(term: Mapping[str, Any], prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _exit_code(term: Mapping[str, Any] | None) -> int | None:
    if not term or term.get("exitCode") is None:
        return None
    try:
        return int(term["exitCode"])
    except (TypeError, ValueError):
        return None


@dataclass
class _Walk:
    """Mutable state of the kubectl printPod walk."""

    status: str
    container: str | None = None
    detail: str = ""
    last_reason: str | None = None
    exit_code: int | None = None


def _last_state(cs: Mapping[str, Any]) -> tuple[str | None, int | None, str]:
    last = (cs.get("lastState") or {}).get("terminated")
    if not last:
        return None, None, ""
    code = _exit_code(last)
    words = _terminated_words(last)
    return words, code, f"last terminated: {words} (exit code {code})"


def _init_walk(pod: Mapping[str, Any], walk: _Walk) -> bool:
    """Follow kubectl through the init containers; True while the pod is still initialising."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    inits = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in inits if c.get("restartPolicy") == "Always"}
    for index, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term and _exit_code(term) == 0:
            continue
        if cs.get("name") in sidecars and cs.get("started"):
            continue
        walk.container = cs.get("name")
        if term:
            walk.status = _terminated_words(term, "Init:")
            walk.exit_code = _exit_code(term)
            walk.detail = f"init container {walk.container} failed: {_terminated_words(term)}"
        elif waiting and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            walk.status = f"Init:{waiting['reason']}"
            walk.detail = str(waiting.get("message") or "")
            walk.last_reason, walk.exit_code, last = _last_state(cs)
            walk.detail = walk.detail or last
        else:
            walk.status = f"Init:{index}/{len(inits)}"
            walk.detail = f"waiting for init container {walk.container}"
        return True
    return False


def _container_walk(pod: Mapping[str, Any], walk: _Walk) -> bool:
    """Follow kubectl through the app containers (last to first); True if one is running+ready."""
    has_running = False
    for cs in reversed((pod.get("status") or {}).get("containerStatuses") or []):
        state = cs.get("state") or {}
        waiting, term = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            walk.status, walk.container = str(waiting["reason"]), cs.get("name")
            walk.last_reason, walk.exit_code, last = _last_state(cs)
            walk.detail = "; ".join(p for p in (str(waiting.get("message") or ""), last) if p)
        elif term:
            walk.status, walk.container = _terminated_words(term), cs.get("name")
            walk.exit_code = _exit_code(term)
            walk.detail = f"terminated: {_terminated_words(term)} (exit code {walk.exit_code})"
        elif cs.get("ready") and state.get("running") is not None:
            has_running = True
    return has_running


def _counts(pod: Mapping[str, Any]) -> tuple[int, int, int]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    restarts = ready = 0
    for cs in status.get("initContainerStatuses") or []:
        if cs.get("name") in sidecars:
            restarts += int(cs.get("restartCount") or 0)
            ready += 1 if cs.get("ready") else 0
    for cs in status.get("containerStatuses") or []:
        restarts += int(cs.get("restartCount") or 0)
        ready += 1 if cs.get("ready") and (cs.get("state") or {}).get("running") is not None else 0
    return restarts, ready, total


#: the last few thousand pods classified, by object: (the pod, its resourceVersion, its state)
_KNOWN: dict[int, tuple[Mapping[str, Any], str, PodState]] = {}
_KNOWN_KEEP = 1024
_KNOWN_LOCK = threading.Lock()  # the checks of concurrent questions run in worker threads


def classify(pod: Mapping[str, Any]) -> PodState:
    """The pod's PodState (kubectl ``printPod`` for display, plus a stable diagnosis reason).

    The watch cache hands every question the same pod objects: a GPU-stack pod on each of 1,000
    nodes was classified again by every question (~8 ms of a warm why-pending at 10,000 nodes).
    A pod object seen before, at the same resourceVersion, gets the state it got then."""
    version = str(meta_of(pod).get("resourceVersion") or "")
    if not version:
        return _classify(pod)
    hit = _KNOWN.get(id(pod))
    if hit is not None and hit[0] is pod and hit[1] == version:
        return hit[2]
    state = _classify(pod)
    with _KNOWN_LOCK:
        if len(_KNOWN) >= _KNOWN_KEEP:
            del _KNOWN[next(iter(_KNOWN))]  # the oldest: the object it holds may be long replaced
        _KNOWN[id(pod)] = (pod, version, state)
    return state


def _classify(pod: Mapping[str, Any]) -> PodState:
    metadata, spec, status = meta_of(pod), pod.get("spec") or {}, pod.get("status") or {}
    phase = str(status.get("phase") or "Unknown")
    walk = _Walk(status=str(status.get("reason") or phase))
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("reason") == "SchedulingGated":
        walk.status = "SchedulingGated"
    initialized = _condition(pod, "Initialized")
    initializing = _init_walk(pod, walk)
    has_running = False
    if not initializing or (initialized is not None and initialized.get("status") == "True"):
        has_running = _container_walk(pod, walk)
        if walk.status == "Completed" and has_running:
            ready_condition = _condition(pod, "Ready") or {}
            walk.status = "Running" if ready_condition.get("status") == "True" else "NotReady"
    terminating = bool(metadata.get("deletionTimestamp"))
    if terminating and status.get("reason") == NODE_LOST:
        walk.status = "Unknown"
    elif terminating and phase not in TERMINAL_PHASES:
        walk.status = "Terminating"
    ready_cond = _condition(pod, "Ready")
    ready = ready_cond is not None and ready_cond.get("status") == "True"
    restarts, ready_count, total = _counts(pod)
    node = spec.get("nodeName") or None
    reason, detail = _reason(pod, walk, phase=phase, ready=ready, node=node, scheduled=scheduled)
    return PodState(
        phase=phase, display_status=walk.status, reason=reason, container=walk.container, detail=detail,
        terminating=terminating, ready=ready, node=node, last_reason=walk.last_reason,
        exit_code=walk.exit_code, restarts=restarts, ready_containers=ready_count, total_containers=total,
    )


def _reason(
    pod: Mapping[str, Any], walk: _Walk, *, phase: str, ready: bool, node: str | None,
    scheduled: Mapping[str, Any] | None,
) -> tuple[str, str]:
    """Turn kubectl's display word into the stable diagnosis key, with a detail line."""
    status = pod.get("status") or {}
    deleted = meta_of(pod).get("deletionTimestamp")
    if deleted and status.get("reason") == NODE_LOST:
        return NODE_LOST, f"node {node} is unreachable; the pod was marked for deletion at {deleted}"
    if walk.status == "Terminating":
        return "Terminating", f"deletion requested at {deleted}" + (f" on node {node}" if node else "")
    if status.get("reason") == "Evicted":
        return "Evicted", str(status.get("message") or "evicted by the kubelet")
    if walk.status == "SchedulingGated":
        return "SchedulingGated", str((scheduled or {}).get("message") or "scheduling gates are set")
    if phase == "Pending" and not node:
        message = str((scheduled or {}).get("message") or "")
        return "Unscheduled", message or "not yet assigned to a node"
    if walk.status in ("Running", "NotReady") or (phase == "Running" and not walk.container):
        if ready:
            return "Running", f"running on node {node}"
        walk.container = _first_unready(pod)
        if walk.container is None:
            return "NotReady", "the pod is running but its Ready condition is not True"
        return "NotReady", f"container {walk.container} is running but not ready (readiness probe failing?)"
    if walk.status.startswith("Init:") or walk.container:
        bare = walk.status.removeprefix("Init:")
        if bare.startswith(("ExitCode:", "Signal:")):
            bare = "Error"
        return (bare if not bare[:1].isdigit() else "PodInitializing"), walk.detail
    if phase == "Pending":
        return "Pending", f"scheduled to node {node}; the kubelet has not reported container states yet"
    return walk.status, walk.detail or str(status.get("message") or "")


def _first_unready(pod: Mapping[str, Any]) -> str | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if not cs.get("ready"):
            return str(cs.get("name"))
    return None


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's Ready condition is True (what the kubelet says once every container is ready).

    Tolerates a malformed status (a pasted or hostile object): anything unreadable is not ready.
    """
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def running_ready(pod: Mapping[str, Any]) -> bool:
    """Phase Running and Ready: a pod that serves (an agent to exec into, a replica that answers)."""
    status = pod.get("status")
    return isinstance(status, Mapping) and status.get("phase") == "Running" and pod_ready(pod)


def _all_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [cs for key in ("initContainerStatuses", "containerStatuses") for cs in status.get(key) or []
            if isinstance(cs, Mapping)]


def crash_loop_status(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The status of the first container (init or app) waiting in CrashLoopBackOff, else None.

    The one test of "is this pod crash-looping" as the kubelet reports it; the caller quotes the
    container's ``restartCount`` and last termination from what it returns.
    """
    for cs in _all_statuses(pod):
        if ((cs.get("state") or {}).get("waiting") or {}).get("reason") == CRASH_LOOP:
            return cs
    return None


def crash_looping(pod: Mapping[str, Any]) -> bool:
    """A container of the pod waits in CrashLoopBackOff."""
    return crash_loop_status(pod) is not None


def keeps_failing(state: PodState, *, waiting: str = "", restarts: int | None = None) -> bool:
    """The pod's containers keep failing: a crash-loop or failure reason, or restarts while not ready.

    Wider than ``crash_looping``: between two back-offs a crash-looping container shows ``Error``
    or ``OOMKilled``, or runs without being ready. ``waiting`` and ``restarts`` narrow the answer to
    one container (its waiting reason and restart count) when the caller has picked one.
    """
    reasons = {state.reason, state.display_status.removeprefix("Init:"), waiting, state.last_reason or ""}
    count = state.restarts if restarts is None else restarts
    return bool(reasons & CRASH_REASONS) or (count > 0 and not state.ready)
