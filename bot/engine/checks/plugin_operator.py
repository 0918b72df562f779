"""A GPU Operator node whose operand chain is broken: the first stage that is not running, quoted.

The operator's operands wait for each other: the toolkit and the device plugin wait (in init
containers) for the driver, the validator checks driver, toolkit and CUDA before the plugin
registers the cards. So one broken link shows as a row of pods stuck in Init, and the one that
matters is the first in the order driver -> toolkit -> validator -> plugin. This check names that
stage on each node and quotes its pod's last message (a driver container that cannot unload the
host's driver means a driver is preinstalled). A failing plugin with a healthy chain before it is
DEVICE_PLUGIN_NOT_RUNNING; the MIG manager, GPU Feature Discovery and DCGM do not gate scheduling
and are reported by node-status only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, node_subject, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.checks._plugin import (
    eligible_nodes,
    gpu_machines,
    is_ready,
    newest_warning,
    nodes_text,
    placement_line,
    placement_message,
    placement_status,
    pod_story_lines,
    sandbox_fix,
    short_of,
)
from bot.engine.facts import Facts
from bot.kube.daemonsets import Placement, counts
from bot.kube.gpu_stack import (
    AUX_STAGES,
    CORE_STAGES,
    DEPLOY_LABELS,
    HOST_DRIVER_TEXT,
    StageState,
    first_failing,
    operator_operands,
    stage_states,
)
from bot.kube.resources import gpu_family, pod_gpu_requests
from bot.probes.observation import NodeObservation


class GpuOperatorNotReady(TypedDict):
    stage: str
    name: str
    namespace: str
    status: str
    message: str
    fix: str
    nodes: str
    node: str
    count: int
    label: str
    waiting: str
    driver: str
    pod: str


GPU_OPERATOR_NOT_READY = Code("GPU_OPERATOR_NOT_READY", GpuOperatorNotReady)

Obj = dict[str, Any]


@dataclass
class Problem:
    """One broken operand stage and the nodes where it is the first broken one, gathered so a
    fleet-wide failure is one finding that lists its nodes, not one finding a node."""

    state: StageState
    status: str
    nodes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    host_driver: str = ""


def _host_driver(facts: Facts, node: str) -> str:
    reading = facts.node_readings.get(node)
    if isinstance(reading, NodeObservation) and reading.driver_path == "host" and reading.driver_version:
        return reading.driver_version
    return ""


def _examine(facts: Facts, node: str, stages: tuple[str, ...], problems: dict[tuple[str, str, str], Problem],
             operands: dict[str, Any]) -> None:
    states = stage_states(operands, facts.components.pods, facts.nodes[node], stages)
    core = [s for s in states if s.stage in CORE_STAGES]
    first = first_failing(core)
    failing: list[StageState] = []
    if first is not None and first.stage != "plugin":
        failing.append(first)
    if first is None or first.stage == "plugin":
        # the auxiliary operands wait for the driver and toolkit too: they are a problem of their
        # own only once those stand
        failing += [s for s in states if s.stage in AUX_STAGES and not s.ok]
    for s in failing:
        status = placement_status(s.placement)
        key = (s.stage, s.placement.daemonset, status)
        prob = problems.setdefault(key, Problem(s, status))
        prob.nodes.append(node)
        prob.lines.append(placement_line(s.placement, s.stage))
        prob.lines += pod_story_lines(facts, s.placement.pod)  # the operand pod's own story
        prob.labels.update(s.placement.admission.labels)
        if s.stage in CORE_STAGES:
            later = [t for t in core[core.index(s) + 1:] if not t.ok]
            prob.waiting.update(t.stage for t in later)
            if later:
                behind = [f"{t.stage} ({t.placement.pod_name or t.placement.daemonset} {placement_status(t.placement)})"
                          for t in later]
                prob.lines.append(f"{node}: waiting behind it: " + ", ".join(behind))
        if s.stage == "driver":
            host = _host_driver(facts, node)
            health = s.placement.health
            said = health.message if health is not None else ""
            if host:
                prob.host_driver = host
                prob.lines.append(f"{node}: nvidia-smi on the host itself reports driver {host}: a driver is "
                                  "preinstalled on the host")
            elif said and HOST_DRIVER_TEXT.search(said):
                prob.host_driver = "preinstalled"


def _message(facts: Facts, p: Placement) -> str:
    """What the cluster shows about the operand, with its pod's newest Warning event when the pod's
    own state says nothing (a sandbox the runtime refuses shows only as ContainerCreating)."""
    message = placement_message(p)
    warning = newest_warning(facts, p.pod)
    if warning and warning not in message:
        message += f"; its newest event: {warning[:400]}"
    return message


def _fix(facts: Facts, p: Placement) -> str:
    """The fix to try first: the sandbox's when the runtime gives the pod none, else the operand's log."""
    return sandbox_fix(newest_warning(facts, p.pod)) or (
        f"Read the failing operand's log: kubectl logs -n {p.namespace} POD --all-containers --previous (the pods "
        f"are in the evidence); kubectl get pods -n {p.namespace} -o wide shows the whole chain per node.")


def run(facts: Facts) -> Iterator[Detection]:
    """GPU_OPERATOR_NOT_READY per failing stage, DaemonSet and state, with the nodes it affects."""
    operands = operator_operands(facts.components.controllers)
    if not operands:
        return
    problems: dict[tuple[str, str, str], Problem] = {}
    subject, ref = "", ""
    if facts.inv.kind:
        pod = facts.pending_pod
        if pod is None:
            return
        nvidia = [r for r in pod_gpu_requests(pod) if gpu_family(r) == "nvidia"]
        if not nvidia:
            return
        subject, ref = pod_subject(pod), pod_ref(pod)
        for node in eligible_nodes(facts, pod):
            if any(short_of(facts.nodes[node], r) for r in nvidia):
                _examine(facts, node, CORE_STAGES, problems, operands)
    else:
        for node in gpu_machines(facts, facts.scope_nodes):
            if is_ready(facts.nodes[node]):
                _examine(facts, node, (*CORE_STAGES, *AUX_STAGES), problems, operands)
    for prob in problems.values():
        s, p = prob.state, prob.state.placement
        ds = operands[s.stage]
        evidence = [f"{p.namespace}/{p.daemonset}: {counts(ds).text()}", *prob.lines[:20]]
        yield GPU_OPERATOR_NOT_READY.detect(
            subject or node_subject(prob.nodes[0]),
            {
                "stage": s.stage,
                "name": p.daemonset,
                "namespace": p.namespace,
                "status": prob.status,
                "message": _message(facts, p),
                "fix": _fix(facts, p),
                "nodes": nodes_text(prob.nodes),
                "node": prob.nodes[0],
                "count": len(prob.nodes),
                "label": ", ".join(sorted(prob.labels)) or DEPLOY_LABELS.get(s.stage, "none"),
                "waiting": ", ".join(t for t in CORE_STAGES if t in prob.waiting) or "nothing",
                "driver": prob.host_driver or "none",
                "pod": ref,
            },
            role="" if s.stage in CORE_STAGES else "auxiliary",
            evidence=evidence,
        )


CHECK = Check(
    name="plugin.operator",
    reads=("pending_pod", "nodes", "components", "scope_nodes", "node_readings"),
    emits=(GPU_OPERATOR_NOT_READY,),
    run=run,
)
