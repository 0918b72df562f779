"""The gpubot-node agent in a simulated cluster: its DaemonSet and one pod per node with a node section.

Every node that has both a Node object and a ``nodes:`` section gets a Running, Ready agent pod,
unless its section says ``agent: missing`` (no pod), ``pending`` or ``crashloop``. Exec into an
agent pod is answered by ``agent_exec`` from the same node facts, through the same command table
as the node's SSH server (``SshFleet.read``), so both transports see the very same node.
"""

from __future__ import annotations

from typing import Any

from bot.probes.node_agent import AGENT_CONTAINER, AGENT_NAME
from bot.sim.scenario import NodeFacts, Scenario

Obj = dict[str, Any]

#: where the simulated agent runs (the default of the ``namespace`` setting)
AGENT_NAMESPACE = "gpubot"
_LABELS = {"app.kubernetes.io/name": AGENT_NAME, "app.kubernetes.io/part-of": "gpubot"}
_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
_CREATED = "2024-01-01T00:00:00Z"


def _daemonset() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE, "labels": dict(_LABELS),
                     "uid": f"uid-ds-{AGENT_NAME}", "creationTimestamp": _CREATED},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": AGENT_NAME}},
            "template": {
                "metadata": {"labels": dict(_LABELS)},
                "spec": {"containers": [{"name": AGENT_CONTAINER, "image": "gpubot:sim"}],
                         "tolerations": _TOLERATIONS},
            },
        },
    }


def _status(mode: str) -> Obj:
    if mode == "pending":
        waiting = {"reason": "ContainerCreating"}
        return {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": AGENT_CONTAINER, "ready": False, "restartCount": 0,
                                       "state": {"waiting": waiting}}]}
    if mode == "crashloop":
        waiting = {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
        return {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": AGENT_CONTAINER, "ready": False, "restartCount": 12,
                                       "state": {"waiting": waiting}}]}
    return {"phase": "Running", "startTime": _CREATED, "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": AGENT_CONTAINER, "ready": True, "restartCount": 0,
                                   "state": {"running": {"startedAt": _CREATED}}}]}


def _pod(node: str, facts: NodeFacts) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{AGENT_NAME}-{node}"[:63].rstrip("-."),
            "namespace": AGENT_NAMESPACE,
            "labels": dict(_LABELS),
            "uid": f"uid-agent-{node}",
            "creationTimestamp": _CREATED,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": AGENT_NAME,
                                 "uid": f"uid-ds-{AGENT_NAME}", "controller": True}],
        },
        "spec": {"nodeName": node, "containers": [{"name": AGENT_CONTAINER, "image": "gpubot:sim"}],
                 "tolerations": _TOLERATIONS},
        "status": _status(facts.agent_mode),
    }


def agent_objects(scenario: Scenario) -> list[Obj]:
    """The agent DaemonSet and its pods; nothing when the scenario has no node sections."""
    named = {
        str((o.get("metadata") or {}).get("name", ""))
        for o in scenario.objects
        if o.get("kind") == "Node"
    }
    pods = [_pod(n, f) for n, f in sorted(scenario.nodes.items()) if n in named and f.agent_mode != "missing"]
    if not any(n in named for n in scenario.nodes):
        return []
    return [_daemonset(), *pods]


def is_agent_pod(pod: Obj) -> bool:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") == AGENT_NAMESPACE and (meta.get("labels") or {}).get(
        "app.kubernetes.io/name"
    ) == AGENT_NAME
