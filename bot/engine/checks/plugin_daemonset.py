"""The device plugin that should register a GPU node's cards has no healthy pod on that node.

Without a running device plugin the kubelet never learns of the cards (or drops them when the
plugin dies), so the node advertises nothing and a GPU pod waits with "Insufficient
nvidia.com/gpu", which reads like "all cards are taken". Three ways it happens: there is no
plugin DaemonSet at all; the DaemonSet does not admit the node (its nodeSelector/affinity wants a
label the node lacks, typically NFD's or the operator's GPU label, or the node has a taint the
DaemonSet does not tolerate); or its pod on the node is crash-looping / not Ready. The pod's last
termination message is quoted, since that is the line that says why.

For a pending pod, only nodes the pod could use and that lack its resource are examined; for
node-status, every GPU node in scope. A GPU Operator plugin that only waits for an earlier
operand (driver, toolkit, validator) is left to GPU_OPERATOR_NOT_READY.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, node_subject, pod_subject
from bot.engine.checks._common import PodItem, fmt_num, pod_ref
from bot.engine.checks._plugin import (
    NOT_COUNTED,
    blocking_taints,
    eligible_nodes,
    gpu_machines,
    is_ready,
    newest_warning,
    nodes_text,
    offer_text,
    placement_line,
    placement_message,
    placement_status,
    pod_story_lines,
    sandbox_fix,
    short_of,
)
from bot.engine.facts import Facts, per_cluster, per_question
from bot.engine.per_node import of_api
from bot.kube.daemonsets import Placement, counts, placement
from bot.kube.gpu_stack import (
    CORE_STAGES,
    FAMILY_PLUGIN,
    MIG_STRATEGY,
    NFD_LABEL_PREFIXES,
    PLUGIN_KINDS,
    first_failing,
    mig_labels,
    nfd_workers,
    operator_operands,
    plugin_daemonsets,
    plugin_kind,
    served_families,
    stage_states,
)
from bot.kube.objects import labels_of, meta_of
from bot.kube.resources import GpuCapacity, gpu_family, node_gpu_capacity, pod_gpu_requests
from bot.kube.taints import taint_str


class CrashingPod(PodItem):
    """A crash-looping plugin pod: the restart offer repeats over these."""

    node: str


class DevicePluginNotRunning(TypedDict):
    fix: str
    plugin: str
    name: str
    namespace: str
    status: str
    nodes: str
    node: str
    count: int
    message: str
    label: str
    crashing: list[CrashingPod]
    pod: str
    resource: str


DEVICE_PLUGIN_NOT_RUNNING = Code("DEVICE_PLUGIN_NOT_RUNNING", DevicePluginNotRunning)

Obj = Mapping[str, Any]


@dataclass
class Problem:
    """Nodes where one DaemonSet (or the lack of one) fails the same way."""

    ds: Obj | None
    status: str
    plugin: str
    nodes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    message: str = ""
    labels: set[str] = field(default_factory=set)
    crashing: list[CrashingPod] = field(default_factory=list)
    #: the fix when the runtime gives the plugin pod no sandbox ("" otherwise)
    sandbox: str = ""


@dataclass(frozen=True)
class _Stack:
    """What every node's examination shares (read once per question, not once per node): the
    device-plugin DaemonSets and the GPU Operator's operands."""

    plugins: list[Obj]
    operands: dict[str, Obj]
    #: the families each plugin serves, in ``plugins``' order (worked out from names and labels)
    families: list[frozenset[str]]

    @classmethod
    def of(cls, facts: Facts) -> _Stack:
        controllers = facts.components.controllers
        plugins = plugin_daemonsets(controllers)
        families = [k.families if (k := plugin_kind(d)) else frozenset() for d in plugins]
        return cls(plugins, operator_operands(controllers), families)

    def serving(self, families: set[str]) -> list[Obj]:
        return [d for d, served in zip(self.plugins, self.families, strict=True) if served & families]


def _left_to_operator(facts: Facts, operands: dict[str, Obj], ds: Obj, node: str) -> bool:
    """The GPU Operator's own plugin on a node where it is switched off (deploy label not
    ``true``, e.g. paused for a MIG change) or waits for an earlier failing operand: that is
    GPU_OPERATOR_NOT_READY's (or MIG_STRATEGY_MISMATCH's) to report."""
    if operands.get("plugin") is not ds:
        return False
    states = stage_states(operands, facts.components.pods, facts.nodes[node], CORE_STAGES)
    if any(s.stage == "plugin" and s.disabled for s in states):
        return True
    first = first_failing(states)
    return first is not None and first.stage != "plugin"


def _examine(
    facts: Facts,
    stack: _Stack,
    node: str,
    families: set[str],
    problems: dict[tuple[str, str], Problem],
    caps: GpuCapacity | None = None,
) -> None:
    """Record what keeps a plugin for ``families`` from running on ``node`` (``caps``: its
    ``node_gpu_capacity`` where the caller has it)."""
    obj = facts.nodes[node]
    serving = stack.serving(families)
    placed = [(d, placement(d, facts.components.pods, obj)) for d in serving]
    placed = [(d, p) for d, p in placed if not _left_to_operator(facts, stack.operands, d, node)]
    if serving and not placed:
        return
    on_node = [(d, p) for d, p in placed if p.admission.ok or p.pod is not None]
    if on_node:
        for d, p in on_node:
            if not p.ok:
                _record(problems, d, p, facts)
                mig = mig_labels(obj)
                if p.health is not None and p.health.crashing and mig.get(MIG_STRATEGY):
                    problems[(f"{p.namespace}/{p.daemonset}", placement_status(p))].lines.append(
                        f"{node}: MIG labels " + ", ".join(f"{k}={v}" for k, v in sorted(mig.items())))
        return
    if served_families(obj, caps):
        return  # something registers cards here: a plugin run by the host (Bottlerocket), or another stack
    if placed:
        for d, p in placed:
            _record(problems, d, p, facts)
            if any(label.startswith(NFD_LABEL_PREFIXES) for label in p.admission.labels):
                _why_unlabelled(facts, obj, problems[(f"{p.namespace}/{p.daemonset}", placement_status(p))])
        return
    title = " or ".join(FAMILY_PLUGIN.get(f, f) for f in sorted(families))
    prob = problems.setdefault(("", "missing"), Problem(
        None, "no device-plugin DaemonSet", title, message="no DaemonSet of a device plugin exists in any namespace"))
    prob.nodes.append(node)
    prob.lines.append(f"{node}: advertises no {'/'.join(sorted(families))} resource and no device-plugin "
                      f"DaemonSet for it exists in any namespace")


def _why_unlabelled(facts: Facts, node: Obj, prob: Problem) -> None:
    """The labels come from Node Feature Discovery: is its worker running on the node, and which
    PCI labels did it give the node (a class-prefixed pci-0300_10de is not pci-10de)?"""
    labels = labels_of(node)
    pci = sorted(f"{k}={v}" for k, v in labels.items() if k.startswith("feature.node.kubernetes.io/pci-"))
    if pci:
        name = meta_of(node).get("name")
        prob.lines.append(f"{name}: the PCI labels it has: " + ", ".join(pci[:8]))
    for w in nfd_workers(facts.components.controllers):
        p = placement(w, facts.components.pods, node)
        if not p.ok:
            prob.lines.append(placement_line(p, "Node Feature Discovery worker"))


def _record(problems: dict[tuple[str, str], Problem], ds: Obj, p: Placement, facts: Facts) -> None:
    status = placement_status(p)
    kind = plugin_kind(ds)
    key = (f"{p.namespace}/{p.daemonset}", status)
    prob = problems.setdefault(key, Problem(ds, status, kind.title if kind else "device plugin"))
    prob.nodes.append(p.node)
    prob.lines.append(placement_line(p))
    prob.lines += pod_story_lines(facts, p.pod)  # the plugin pod's own story: its events, containers
    prob.labels.update(p.admission.labels)
    h = p.health
    if not prob.message:
        prob.message = placement_message(p)
        warning = newest_warning(facts, p.pod)
        if warning and warning not in prob.message:
            prob.message += f"; its newest event: {warning[:400]}"
        prob.sandbox = sandbox_fix(warning)
    if h is not None and h.crashing and p.pod is not None:
        prob.crashing.append({"namespace": p.namespace, "name": p.pod_name, "ref": f"{p.namespace}/{p.pod_name}",
                              "node": p.node})


def _first_fix(prob: Problem, namespace: str, name: str) -> str:
    """The fix to try first, for the way this plugin fails on these nodes."""
    if prob.sandbox:
        return prob.sandbox
    if prob.ds is None:
        return ("Install a device plugin for the GPUs (the NVIDIA device plugin's Helm chart, or the GPU Operator) "
                "and check its pods reach every GPU node.")
    if prob.labels:
        return (f"Give the node what DaemonSet {namespace}/{name} selects on ({', '.join(sorted(prob.labels))}): "
                "fix the labeller (Node Feature Discovery / GPU Feature Discovery must run on the node and use the "
                "label name the chart expects), label the node yourself (kubectl label node NODE KEY=VALUE), or "
                "change the DaemonSet's nodeSelector/affinity to a label the node has.")
    if prob.status == NOT_COUNTED:
        return (f"DaemonSet {namespace}/{name} reports a pod on every node it wants one on, yet this GPU node has "
                "none and registers no GPU: check that kube-controller-manager (its DaemonSet controller) runs, then "
                f"compare kubectl get ds -n {namespace} {name} -o yaml (nodeSelector, affinity, status) with kubectl "
                "get node NODE --show-labels.")
    if prob.status.startswith("not scheduled"):
        return (f"Let DaemonSet {namespace}/{name} onto the node: add the toleration for the node's taint to its "
                "pod template (tolerations), or remove the taint.")
    if not prob.crashing and "no pod" not in prob.status and "Running" not in prob.status:
        return (f"Read the plugin pod's own story in the evidence (its events and container states): kubectl "
                f"describe pod -n {namespace} POD; a sandbox that fails with 'no runtime for \"nvidia\"' needs the "
                "NVIDIA runtime in containerd/CRI-O on the node (nvidia-ctk runtime configure).")
    return (f"Read the plugin's previous run on the node: kubectl logs -n {namespace} POD --previous "
            "(the pods are in the evidence).")


def _detections(
    problems: dict[tuple[str, str], Problem], subject: str, lead: list[str], pod: str, resource: str
) -> Iterator[Detection]:
    for prob in problems.values():
        meta = meta_of(prob.ds)
        evidence = [f"{meta.get('namespace')}/{meta.get('name')}: {counts(prob.ds).text()}"] if prob.ds else []
        evidence += [line for line in lead if line.split(":", 1)[0] in prob.nodes]
        evidence += prob.lines[:20]
        yield DEVICE_PLUGIN_NOT_RUNNING.detect(
            subject if subject else node_subject(prob.nodes[0]),
            {
                "fix": _first_fix(prob, str(meta.get("namespace") or "NAMESPACE"), str(meta.get("name") or "")),
                "plugin": prob.plugin,
                "name": str(meta.get("name") or "(none installed)"),
                "namespace": str(meta.get("namespace") or "(any)"),
                "status": prob.status,
                "nodes": nodes_text(prob.nodes),
                "node": prob.nodes[0],
                "count": len(prob.nodes),
                "message": prob.message,
                "label": ", ".join(sorted(prob.labels)) or "none",
                "crashing": list(prob.crashing),  # the problem may be shared (``_examined``)
                "pod": pod,
                "resource": resource,
            },
            evidence=evidence,
        )


@per_cluster("nodes", "components")
def _examined(facts: Facts, short: tuple[tuple[str, str], ...]) -> dict[tuple[str, str], Problem]:
    """What keeps a plugin from each (node, family) of ``short``, examined in that order: the
    nodes and the GPU stack's alone, so the diagnoses of one ``gpubot pending`` answer whose pods
    select the same nodes share it (shared: callers do not change it)."""
    problems: dict[tuple[str, str], Problem] = {}
    stack = _Stack.of(facts)
    for node, family in short:
        _examine(facts, stack, node, {family}, problems)
    return problems


def run(facts: Facts) -> Iterator[Detection]:
    """DEVICE_PLUGIN_NOT_RUNNING per DaemonSet and failure, with the nodes it affects."""
    problems: dict[tuple[str, str], Problem] = {}
    if facts.inv.kind:
        pod = facts.pending_pod
        if pod is None:
            return
        asks = pod_gpu_requests(pod)
        lead: list[str] = []
        short: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        eligible = eligible_nodes(facts, pod)
        for resource, want in sorted(asks.items()):
            family = gpu_family(resource)
            if family is None:
                continue
            for node in eligible:
                if (node, family) in seen:
                    continue
                caps = node_gpu_capacity(facts.nodes[node])  # asked once here, used twice
                if not short_of(facts.nodes[node], resource, caps):
                    continue
                seen.add((node, family))
                short.append((node, family))
                lead.append(f"{node}: {offer_text(facts.nodes[node], resource, caps)}; "
                            f"{pod_ref(pod)} asks {resource}: {fmt_num(want)}")
                taints = blocking_taints(pod, facts.nodes[node])
                if taints:
                    shown = ", ".join(taint_str(t) for t in taints)
                    lead.append(f"{node}: {pod_ref(pod)} does not tolerate {shown} here either; "
                                "it needs that toleration too")
        resources = ", ".join(sorted(asks))
        problems = _examined(facts, tuple(short))
        yield from _detections(problems, pod_subject(pod), lead, pod=pod_ref(pod), resource=resources)
        return
    # node-status: every ready GPU node in scope, each examined as it answered where it did
    for node in gpu_machines(facts, facts.scope_nodes):
        if is_ready(facts.nodes[node]):
            _merge(problems, _node_problems(facts, node, None))
    yield from _detections(problems, "", [], pod="", resource="GPU")


#: what every node's examination shares, once a question
_stack = per_question(_Stack.of)


@of_api(asked=lambda facts: not facts.inv.kind)  # node-status's, not a pending pod's
def _node_problems(facts: Facts, node: str, _reading: object) -> dict[tuple[str, str], Problem]:
    """node-status: what keeps a plugin from ``node``, examined alone (the API's facts only).
    Any plugin may serve a node; with none installed, the NVIDIA one is the one missing."""
    stack = _stack(facts)
    families = set().union(*(k.families for k in PLUGIN_KINDS)) if stack.plugins else {"nvidia"}
    problems: dict[tuple[str, str], Problem] = {}
    _examine(facts, stack, node, families, problems)
    return problems


def _merge(into: dict[tuple[str, str], Problem], problems: dict[tuple[str, str], Problem]) -> None:
    """Add one node's problems to those of the nodes before it, as examining them in turn would
    (the first node's message and fix stand for the group). ``problems`` is left as it was: it
    is the one worked out early."""
    for key, prob in problems.items():
        kept = into.get(key)
        if kept is None:
            into[key] = replace(prob, nodes=list(prob.nodes), lines=list(prob.lines), labels=set(prob.labels),
                                crashing=list(prob.crashing))
            continue
        kept.nodes += prob.nodes
        kept.lines += prob.lines
        kept.labels |= prob.labels
        kept.crashing += prob.crashing
        if not kept.message:
            kept.message, kept.sandbox = prob.message, prob.sandbox


CHECK = Check(
    name="plugin.daemonset",
    reads=("pending_pod", "nodes", "components", "scope_nodes"),
    emits=(DEVICE_PLUGIN_NOT_RUNNING,),
    run=run,
    per_node=(_node_problems,),
)
