"""Pods the kubelet refused at admission: which, on which node, and what its message says.

The scheduler binds a pod to a node; the node's kubelet then admits or rejects it. A rejected pod
goes straight to ``status.phase: Failed`` with the admit handler's ``reason`` and a message
(``Pod was rejected: …`` from Kubernetes 1.26, ``Pod …`` before) and never runs a container. It is
never retried: its ReplicaSet, Job or StatefulSet makes a new pod, which often lands on the same
node and fails the same way, so such workloads pile up Failed pods.

Reasons seen with GPUs: ``UnexpectedAdmissionError`` (the device manager could not allocate:
``Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested:
1, Available: 0, which is unexpected``, or a device-plugin RPC error), ``TopologyAffinityError``
(the topology manager found no NUMA-aligned set) and ``OutOf<resource>`` (``OutOfnvidia.com/gpu``:
the node had not enough left). Any other reason on a pod that never ran is kept verbatim.

Pure functions over API dicts: no I/O, and nothing here decides wording or rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.resources import pod_gpu_requests

Obj = Mapping[str, Any]

UNEXPECTED = "UnexpectedAdmissionError"
TOPOLOGY = "TopologyAffinityError"
OUT_OF = "OutOf"
#: Failed-pod reasons that are not an admission rejection (they are explained elsewhere)
NOT_ADMISSION: frozenset[str] = frozenset(
    {"Evicted", "DeadlineExceeded", "Shutdown", "Terminated", "NodeShutdown", "NodeLost", "Preempting",
     "BackoffLimitExceeded"}
)
#: what kubelets prefix the reject message with (1.26+, and before)
_PREFIXES = ("Pod was rejected: ", "Pod rejected: ", "Pod ")

_UNAVAILABLE = re.compile(
    r"requested number of devices unavailable for (?P<resource>\S+?)\.?\s+Requested:\s*(?P<requested>\d+),\s*"
    r"Available:\s*(?P<available>\d+)"
)
_UNHEALTHY = re.compile(r"no healthy devices present; cannot allocate unhealthy devices (?P<resource>\S+?)(?:,|$)")
_UNREGISTERED = re.compile(r"cannot allocate unregistered device (?P<resource>\S+?)(?:,|$)")
_NOT_ENOUGH = re.compile(r"Node didn't have enough resource: (?P<resource>[^,\s]+)")
_LOST_WORDS = ("GPU is lost", "fallen off the bus", "GPU_IS_LOST")
_PLUGIN_WORDS = ("rpc error", "device plugin", "GetPreferredAllocation", "Update plugin resources", "PreStartContainer")


@dataclass(frozen=True)
class Rejection:
    """One pod the kubelet rejected."""

    namespace: str
    name: str
    node: str
    #: ``status.reason`` as the kubelet set it
    reason: str
    #: ``status.message`` without the ``Pod was rejected:`` prefix
    message: str
    #: what the message says went wrong: ``unavailable`` (device count), ``unhealthy``,
    #: ``unregistered``, ``lost`` (the driver lost a card), ``plugin`` (a device-plugin call
    #: failed), ``topology``, ``out_of``, ``other``
    cause: str
    #: the resource the message names ("" when none)
    resource: str = ""
    requested: int | None = None
    available: int | None = None
    created: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def strip_prefix(message: str) -> str:
    """The admit handler's own words, without the kubelet's ``Pod was rejected:`` / ``Pod`` prefix."""
    text = message.strip()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix):].strip()
    return text


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _never_ran(pod: Obj) -> bool:
    """No container of the pod ever started (a rejected pod's containers are never created)."""
    status = _mapping(pod.get("status"))
    for key in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(key)
        for cs in statuses if isinstance(statuses, list) else []:
            if not isinstance(cs, Mapping):
                continue
            state, last = _mapping(cs.get("state")), _mapping(cs.get("lastState"))
            if state.get("running") or last.get("terminated") or last.get("running"):
                return False
            if _mapping(state.get("terminated")).get("startedAt") or str(cs.get("restartCount") or 0) != "0":
                return False
    return True


def classify_message(reason: str, message: str) -> tuple[str, str, int | None, int | None]:
    """(cause, resource, requested, available) read from an admission reason and message."""
    text = strip_prefix(message)
    if reason == TOPOLOGY:
        return "topology", "", None, None
    if reason.startswith(OUT_OF) and len(reason) > len(OUT_OF):
        return "out_of", reason[len(OUT_OF):], None, None
    if any(word.lower() in text.lower() for word in _LOST_WORDS):
        return "lost", "", None, None
    match = _UNAVAILABLE.search(text)
    if match is not None:
        return "unavailable", match.group("resource"), int(match.group("requested")), int(match.group("available"))
    match = _UNHEALTHY.search(text)
    if match is not None:
        return "unhealthy", match.group("resource"), None, None
    match = _UNREGISTERED.search(text)
    if match is not None:
        return "unregistered", match.group("resource"), None, None
    match = _NOT_ENOUGH.search(text)
    if match is not None:
        return "out_of", match.group("resource"), None, None
    if any(word.lower() in text.lower() for word in _PLUGIN_WORDS):
        return "plugin", "", None, None
    return "other", "", None, None


def rejection(pod: Obj) -> Rejection | None:
    """The admission rejection of ``pod``, or None when it was not rejected by its kubelet."""
    if not isinstance(pod, Mapping):
        return None
    status, spec, meta = (_mapping(pod.get(k)) for k in ("status", "spec", "metadata"))
    if status.get("phase") != "Failed" or not spec.get("nodeName"):
        return None
    reason = str(status.get("reason") or "")
    if not reason or reason in NOT_ADMISSION or not _never_ran(pod):
        return None
    message = str(status.get("message") or "")
    cause, resource, requested, available = classify_message(reason, message)
    if not resource:
        # the message may not name it (a plugin error): the pod's own GPU request does
        resource = next(iter(sorted(pod_gpu_requests(pod))), "") if spec.get("containers") else ""
    return Rejection(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        node=str(spec.get("nodeName")),
        reason=reason,
        message=strip_prefix(message) or "(no message)",
        cause=cause,
        resource=resource,
        requested=requested,
        available=available,
        created=str(meta.get("creationTimestamp") or ""),
    )


def rejections(pods: Iterable[Obj]) -> list[Rejection]:
    """Every rejected pod among ``pods``, newest first."""
    found = [r for r in (rejection(p) for p in pods) if r is not None]
    found.sort(key=lambda r: (r.created, r.name), reverse=True)
    return found
