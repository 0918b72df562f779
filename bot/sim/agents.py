"""gpubot's per-node pods in a simulated cluster: the gpubot-node agent and the gpubot-actuator.

Every node that has both a Node object and a ``nodes:`` section gets a Running, Ready agent pod,
unless its section says ``agent: missing`` (no pod), ``pending`` or ``crashloop``. Exec into an
agent pod is answered (``bot.sim.exec_ws``) from the same node facts, through the same command table
as the node's SSH server (``SshFleet.read``), so both transports see the very same node.

The actuator belongs to the remediation component, so it exists only where remediation is
installed (the scenario's ``remediation: true``, or ``SimCluster(remediation=True)``, which the
action tests and ``gpubot act --scenario`` use): then each such node gets a privileged actuator
pod, unless its ``actuator:`` says missing, pending or crashloop. Exec into it is answered by
``SshFleet.actuate``: the same writes, state and faults as SSH to the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.probes.node_agent import ACTUATOR_CONTAINER, ACTUATOR_NAME, AGENT_CONTAINER, AGENT_NAME
from bot.sim.scenario import NodeFacts, Scenario

Obj = dict[str, Any]

#: where the simulated agent runs (the default of the ``namespace`` setting)
AGENT_NAMESPACE = "gpubot"
_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
_CREATED = "2024-01-01T00:00:00Z"
_IMAGE_ID = "docker.io/library/gpubot@sha256:" + "0" * 64


@dataclass(frozen=True)
class _Component:
    """One per-node DaemonSet of gpubot: its name, container, pod spec extras and mode per node."""

    name: str
    container: str
    mode: Callable[[NodeFacts], str]
    #: what the pod spec adds (the actuator: host PID namespace, privileged)
    spec: Obj

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": self.name, "app.kubernetes.io/part-of": "gpubot"}

    def pod_spec(self) -> Obj:
        container: Obj = {"name": self.container, "image": "gpubot:sim"}
        if self.spec.get("privileged"):
            container["securityContext"] = {"privileged": True}
        extra = {k: v for k, v in self.spec.items() if k != "privileged"}
        return {"containers": [container], "tolerations": _TOLERATIONS, **extra}


#: the RuntimeClass the agent runs with, as the chart's default (``nodeAgent.runtimeClassName``)
AGENT_RUNTIME_CLASS = "nvidia"
AGENT = _Component(AGENT_NAME, AGENT_CONTAINER, lambda f: f.agent_mode, {"runtimeClassName": AGENT_RUNTIME_CLASS})
ACTUATOR = _Component(
    ACTUATOR_NAME, ACTUATOR_CONTAINER, lambda f: f.actuator or "ok", {"hostPID": True, "privileged": True}
)


def _daemonset(c: _Component) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": c.name,
            "namespace": AGENT_NAMESPACE,
            "labels": c.labels,
            "uid": f"uid-ds-{c.name}",
            "creationTimestamp": _CREATED,
        },
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": c.name}},
            "template": {"metadata": {"labels": c.labels}, "spec": c.pod_spec()},
        },
    }


def _status(container: str, mode: str) -> Obj:
    # image and imageID as a kubelet reports them (the official client's models require both)
    base = {"name": container, "image": "gpubot:sim", "imageID": _IMAGE_ID}
    if mode == "pending":
        waiting = {"reason": "ContainerCreating"}
        return {
            "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{**base, "ready": False, "restartCount": 0, "state": {"waiting": waiting}}],
        }
    if mode == "crashloop":
        waiting = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
        return {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{**base, "ready": False, "restartCount": 12, "state": {"waiting": waiting}}],
        }
    return {
        "phase": "Running",
        "startTime": _CREATED,
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {**base, "ready": True, "restartCount": 0, "state": {"running": {"startedAt": _CREATED}}}
        ],
    }


def _pod(c: _Component, node: str, facts: NodeFacts) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{c.name}-{node}"[:63].rstrip("-."),
            "namespace": AGENT_NAMESPACE,
            "labels": c.labels,
            "uid": f"uid-{c.name}-{node}",
            "creationTimestamp": _CREATED,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": c.name,
                    "uid": f"uid-ds-{c.name}",
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": node, **c.pod_spec()},
        "status": _status(c.container, c.mode(facts)),
    }


def _objects(scenario: Scenario, c: _Component) -> list[Obj]:
    """The DaemonSet and its pods on the nodes with a section; nothing without node sections."""
    named = {str((o.get("metadata") or {}).get("name", "")) for o in scenario.objects if o.get("kind") == "Node"}
    if not any(n in named for n in scenario.nodes):
        return []
    pods = [_pod(c, n, f) for n, f in sorted(scenario.nodes.items()) if n in named and c.mode(f) != "missing"]
    return [_daemonset(c), *pods]


def agent_objects(scenario: Scenario) -> list[Obj]:
    """The agent DaemonSet and its pods; nothing when the scenario has no node sections. The
    agent's RuntimeClass comes with it, unless the scenario lists the cluster's RuntimeClasses
    itself (then the agent's may be missing from them, as on GKE without the GPU Operator)."""
    found = _objects(scenario, AGENT)
    if found and not any(o.get("kind") == "RuntimeClass" for o in scenario.objects):
        found.append({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                      "metadata": {"name": AGENT_RUNTIME_CLASS, "uid": "uid-runtimeclass-nvidia",
                                   "creationTimestamp": _CREATED}, "handler": AGENT_RUNTIME_CLASS})
    return found


def actuator_objects(scenario: Scenario, *, remediation: bool = False) -> list[Obj]:
    """The actuator DaemonSet and its pods where remediation is installed (``remediation`` or the
    scenario's own ``remediation: true``); nothing otherwise."""
    return _objects(scenario, ACTUATOR) if remediation or scenario.remediation else []


def release_namespace(scenario: Scenario, objects: list[Obj]) -> list[Obj]:
    """The release namespace, as the chart creates it, where gpubot's pods are (``objects``) and
    the scenario has none of its own: node actions take their per-node Lease there."""
    if not any((o.get("metadata") or {}).get("namespace") == AGENT_NAMESPACE for o in objects):
        return []
    if any(
        o.get("kind") == "Namespace" and (o.get("metadata") or {}).get("name") == AGENT_NAMESPACE
        for o in scenario.objects
    ):
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": AGENT_NAMESPACE, "labels": {"kubernetes.io/metadata.name": AGENT_NAMESPACE}},
            "status": {"phase": "Active"},
        }
    ]


def _is(pod: Obj, name: str) -> bool:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") == AGENT_NAMESPACE and (meta.get("labels") or {}).get("app.kubernetes.io/name") == name


def is_agent_pod(pod: Obj) -> bool:
    return _is(pod, AGENT_NAME)


def is_actuator_pod(pod: Obj) -> bool:
    return _is(pod, ACTUATOR_NAME)


def exec_mode(scenario: Scenario, pod: Obj) -> str:
    """How exec into ``pod`` behaves: its node's agent or actuator mode; "" for any other pod."""
    facts = scenario.nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
    if facts is None:
        return ""
    if is_agent_pod(pod):
        return AGENT.mode(facts)
    if is_actuator_pod(pod):
        return ACTUATOR.mode(facts)
    return ""
