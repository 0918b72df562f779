"""Node scoping shared by the device-plugin, operator, MIG and sharing checks (plugin.*).

Which nodes a GPU pod's resource should come from: GPU machines (by labels, advertised resources
or a GPU node agent running there), Ready, that the pod's node selection admits. For a node-level
command: the GPU machines in scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.engine.checks._common import fmt_num
from bot.engine.facts import Facts, per_question
from bot.engine.node_rows import ready_condition
from bot.kube.affinity import node_matches, selects_nodes
from bot.kube.daemonsets import UNCOUNTED, Placement
from bot.kube.resources import GpuCapacity, node_gpu_capacity
from bot.kube.runtime_class import parse as parse_runtime_refusal
from bot.kube.scheduling import NOT_READY_TAINTS
from bot.kube.taints import UNSCHEDULABLE_TAINT_KEY, untolerated_taints

Obj = dict[str, Any]
#: a DaemonSet whose own count leaves the node out (DESIRED = CURRENT) though it has no pod there
NOT_COUNTED = "not scheduled, not counted by its controller"

def gpu_machines(facts: Facts, names: list[str] | None = None) -> list[str]:
    """GPU machines among ``names`` (all nodes by default): a GPU label, an advertised GPU
    resource, or a GPU node agent (DaemonSet pod) running there. Sorted."""
    if names is None:
        return list(facts.gpu_nodes)  # classified once per question (``Facts.gpu_nodes``)
    gpu = set(facts.gpu_nodes)
    return sorted(n for n in names if n in gpu)


def is_ready(node: Obj) -> bool:
    return ready_condition(node)[0]


def blocking_taints(pod: Obj, node: Obj) -> list[dict[str, Any]]:
    return [t for t in untolerated_taints(pod, node, include_unschedulable=False)
            if t.get("key") != UNSCHEDULABLE_TAINT_KEY and t.get("key") not in NOT_READY_TAINTS]


@per_question
def admitted_nodes(facts: Facts, pod: Obj) -> list[str]:
    """The nodes whose labels and fields pass the pod's nodeSelector and required node affinity,
    in ``facts.nodes`` order (every node when it sets neither). Shared: do not change it."""
    if not selects_nodes(pod):
        return list(facts.nodes)
    return [n for n, node in facts.nodes.items() if node_matches(pod, node).ok]


def may_land(facts: Facts, pod: Obj, name: str) -> bool:
    """The scheduler could place the pod on the node at all, capacity aside: its nodeSelector and
    required node affinity admit the node, and it tolerates every NoSchedule/NoExecute taint there,
    a cordon's and a NotReady node's included (each of those, where it is why the pod waits, is a
    finding of its own). False for a node whose object was not read."""
    node = facts.nodes.get(name)
    return node is not None and name in _admitted_set(facts, pod) and not untolerated_taints(pod, node)


@per_question
def _admitted_set(facts: Facts, pod: Obj) -> frozenset[str]:
    """``admitted_nodes`` as a set: asked once per candidate node, of thousands of nodes."""
    return frozenset(admitted_nodes(facts, pod))


@per_question
def eligible_nodes(facts: Facts, pod: Obj) -> list[str]:
    """Ready GPU machines the pod's nodeSelector / required affinity admits; of those, the ones
    whose taints it tolerates when there are any (an untolerated taint is its own finding).
    Shared: do not change it."""
    admitted = set(admitted_nodes(facts, pod))
    selected = [n for n in gpu_machines(facts) if n in admitted and is_ready(facts.nodes[n])]
    tolerated = [n for n in selected if not blocking_taints(pod, facts.nodes[n])]
    return tolerated or selected


def short_of(node: Obj, resource: str, caps: GpuCapacity | None = None) -> bool:
    """The node offers none of ``resource``, or less than its capacity (cards marked unhealthy or a
    plugin that stopped: the kubelet keeps capacity and drops allocatable). ``caps``: the node's
    ``node_gpu_capacity`` where the caller has it (a check asking it of hundreds of nodes)."""
    capacity, alloc = (node_gpu_capacity(node) if caps is None else caps).get(resource, (0.0, 0.0))
    return alloc <= 0 or alloc < capacity


def offer_text(node: Obj, resource: str, caps: GpuCapacity | None = None) -> str:
    caps = node_gpu_capacity(node) if caps is None else caps
    capacity, alloc = caps.get(resource, (0.0, 0.0))
    if resource not in caps:
        return f"no {resource}"
    return f"{resource} allocatable {fmt_num(alloc)} of capacity {fmt_num(capacity)}"


def nodes_text(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def placement_status(p: Placement) -> str:
    """A DaemonSet's state on a node in a few words: the pod's status, or why there is none."""
    if p.pod is None:
        if p.admission.ok:
            return "no pod"
        if p.admission.labels:
            return f"not scheduled, node lacks {p.admission.wants()}"
        taints = [r for r in p.admission.reasons if r.startswith("taint ")]
        if taints:
            return f"not scheduled, {taints[0]}"
        uncounted = any(r.startswith(UNCOUNTED) for r in p.admission.reasons)
        return NOT_COUNTED if uncounted else "not scheduled"
    return p.state


def placement_line(p: Placement, what: str = "") -> str:
    """One evidence line: which pod, its status, container, restarts and last words."""
    owner = f"{what} ({p.namespace}/{p.daemonset})" if what else f"{p.namespace}/{p.daemonset}"
    if p.pod is None:
        if not p.admission.ok:
            return f"{p.node}: {owner} does not admit the node: {'; '.join(p.admission.reasons)}"
        return f"{p.node}: {owner} admits the node but has no pod there"
    h = p.health
    status = h.status if h is not None else "Unknown"
    where = f" in container {h.container}" if h is not None and h.container else ""
    restarts = f", {h.restarts} restarts" if h is not None and h.restarts else ""
    said = f": {h.message}" if h is not None and h.message else ""
    label = f"{what} pod" if what else "pod"
    return f"{p.node}: {label} {p.namespace}/{p.pod_name} is {status}{where}{restarts}{said}"


def pod_story_lines(facts: Facts, pod: Mapping[str, Any] | None, *, max_events: int = 3) -> list[str]:
    """A GPU-stack pod's own story, indented under its evidence line: its newest events (a sandbox
    the runtime refuses, an image it cannot pull), container states and conditions."""
    story = facts.components.story_of(pod) if pod is not None else None
    if story is None or not story.events:
        return []
    return [f"    {line}" for line in story.lines(max_events=max_events)[1:]]


def newest_warning(facts: Facts, pod: Mapping[str, Any] | None) -> str:
    """The newest current Warning event of a GPU-stack pod that does not run ("" when none)."""
    story = facts.components.story_of(pod) if pod is not None else None
    if story is None:
        return ""
    found = next((e for e in story.current_events if e.type == "Warning"), None)
    return f"{found.reason}: {found.message}" if found is not None else ""


def sandbox_fix(warning: str) -> str:
    """The fix for a GPU-stack pod the runtime gives no sandbox ("" when that is not its story)."""
    refusal = parse_runtime_refusal(warning)
    if refusal is not None and refusal.kind == "handler":
        return ("The pod gets no sandbox: the container runtime on the node has no 'nvidia' handler. Check that "
                "the NVIDIA Container Toolkit wrote it into the config file this containerd/CRI-O really reads "
                "(kops, k3s, RKE2 and microk8s keep it elsewhere: point the toolkit's CONTAINERD_CONFIG and "
                "CONTAINERD_SOCKET at it, or run nvidia-ctk runtime configure --runtime=containerd on the node), "
                "then restart containerd; the pods start once their sandbox can be made.")
    if warning.startswith("FailedCreatePodSandBox"):
        return ("The pod gets no sandbox: read the kubelet's message in the evidence and the container runtime's "
                "log on the node (journalctl -u containerd).")
    return ""


def placement_message(p: Placement) -> str:
    """What the cluster shows about the DaemonSet on the node, quoting the pod's last words."""
    if p.pod is None:
        if not p.admission.ok:
            more = f" (and {len(p.admission.reasons) - 1} more)" if len(p.admission.reasons) > 1 else ""
            return f"the DaemonSet does not admit the node: {p.admission.reasons[0]}{more}"
        return "the DaemonSet admits the node but has created no pod there"
    h = p.health
    if h is None:
        return "its pod's state is unknown"
    if h.unscheduled:
        return f"its pod is not scheduled: {h.message}"
    if h.crashing:
        quote = h.message or "no message"
        return f"container {h.container} keeps failing ({h.restarts} restarts); its last run ended with: {quote}"
    if h.initialising:
        return f"its pod waits in init container {h.container}" + (f": {h.message}" if h.message else "")
    return f"its pod is {h.status}" + (f" (container {h.container})" if h.container else "") + (
        f": {h.message}" if h.message else "")
