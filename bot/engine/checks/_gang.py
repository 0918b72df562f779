"""The gang story shared by Volcano and KAI: how many of a pod group's tasks fit, and which not.

Both schedulers bind none of a group's pods until ``minMember`` fit at once; the check that knows
the system reads its queue, then hands the group here (``bot.kube.gang`` does the placing).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NotRequired, TypedDict

from bot.engine.check import Code, Detection, pod_subject
from bot.engine.checks._common import event_time, fmt_num, pod_ref
from bot.engine.facts import Facts
from bot.engine.queue_facts import GangFacts
from bot.kube.batch_workloads import display
from bot.kube.gang import free_gpus, place
from bot.kube.objects import Obj, meta_of, namespace_of
from bot.kube.resources import node_gpu_capacity

MAX_ROWS = 12


class GangMember(TypedDict):
    """What every finding about a waiting member of a gang says: the pod, its group and queue."""

    pod: str
    namespace: str
    group: str
    queue: str


class _GangSize(GangMember):
    min_member: str
    count: str


class GangUnschedulable(_GangSize):
    what: str
    placed: str
    resource: NotRequired[str]


KAI_GANG_UNSCHEDULABLE = Code("KAI_GANG_UNSCHEDULABLE", GangUnschedulable)
VOLCANO_GANG_UNSCHEDULABLE = Code("VOLCANO_GANG_UNSCHEDULABLE", GangUnschedulable)


def waiting_member(
    g: GangFacts | None, pod: Obj | None, workload: Obj | None = None
) -> tuple[str, GangMember] | None:
    """(subject, base parameters) for a pod of a group its scheduler's API serves that still
    waits, or for the job itself when it has no pod yet (a Volcano Job its queue holds); None
    for a running or finished pod, or one no such system manages."""
    if g is None or not g.installed:
        return None
    if pod is None:
        if workload is None:
            return None
        meta = meta_of(workload)
        ns, ref = str(meta.get("namespace") or ""), f"{display(workload)}/{meta.get('name')}"
        job: GangMember = {"pod": ref, "namespace": ns, "group": g.group_name or "(none)",
                           "queue": g.queue_name or "(none)"}
        return f"{display(workload)}/{ns}/{meta.get('name')}", job
    if (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed"):
        return None
    ns = namespace_of(pod)
    base: GangMember = {"pod": pod_ref(pod), "namespace": ns, "group": g.group_name, "queue": g.queue_name or "(none)"}
    return pod_subject(pod), base


def res_text(values: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "none"


def group_lines(g: GangFacts) -> list[str]:
    pg = g.pod_group or {}
    spec, status = pg.get("spec") or {}, pg.get("status") or {}
    lines = [
        f"PodGroup {g.group_name}: phase {status.get('phase') or '?'}, minMember {spec.get('minMember', '?')}, "
        f"minResources {res_text(spec.get('minResources'))}, running {status.get('running', 0)}"
    ]
    for cond in [*(status.get("conditions") or []), *(status.get("schedulingConditions") or [])]:
        if cond.get("status", "True") == "True" and cond.get("message"):
            lines.append(f"PodGroup {cond.get('type')} ({cond.get('reason')}): {cond.get('message')}")
    newest = sorted(g.events, key=event_time, reverse=True)[:2]
    for e in newest:
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent") or "?"
        count = f" x{e['count']}" if e.get("count") else ""
        lines.append(f"event on the PodGroup from {source}: {e.get('reason')}{count}: {str(e.get('message'))[:300]}")
    return lines


def _free(facts: Facts) -> dict[str, dict[str, float]]:
    nodes = {
        n: node for n, node in facts.nodes.items()
        if node_gpu_capacity(node) and not (node.get("spec") or {}).get("unschedulable")
    }
    used: dict[str, dict[str, float]] = {}
    for name, pods in facts.node_pods.items():
        for p in pods:
            if p.live:
                row = used.setdefault(name, {})
                for res, amount in p.gpu.items():
                    row[res] = row.get(res, 0.0) + amount
    return free_gpus(nodes, used)


def gang_story(
    facts: Facts, g: GangFacts, code: Code[GangUnschedulable], subject: str, base: GangMember, queue: list[str]
) -> Iterator[Detection]:
    """``code`` for a group fewer than minMember of whose tasks can be placed, with the placement."""
    pg = g.pod_group or {}
    min_member = int(((pg.get("spec") or {}).get("minMember")) or 1)
    waiting = [p for p in g.pods if not (p.get("spec") or {}).get("nodeName")
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    bound = [p for p in g.pods if (p.get("spec") or {}).get("nodeName")
             and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    evidence = group_lines(g) + queue
    params: _GangSize = {**base, "min_member": str(min_member), "count": str(len(g.pods))}
    if len(g.pods) < min_member:
        what = f"only {len(g.pods)} pod(s) of the gang exist and it needs {min_member} (minMember)"
        if not g.pods and str((pg.get("status") or {}).get("phase") or "Pending") == "Pending":
            # Volcano's job controller creates a Job's pods only once its PodGroup is enqueued
            what = (f"PodGroup {g.group_name} is still Pending (not enqueued), so none of its {min_member} "
                    "pods has been created yet")
        yield code.detect(subject, {"what": what, "placed": str(len(g.pods)), **params}, role="short",
                          evidence=evidence)
        return
    if not waiting:
        return
    free = _free(facts)
    plan = place(waiting, free)
    can = len(bound) + len(plan.placed)
    table = [f"{n}: free {res_text({r: fmt_num(v) for r, v in room.items()})}" for n, room in sorted(free.items())]
    if can < min_member and plan.unplaced:
        name, asks = plan.unplaced[0]
        res = max(asks, key=lambda r: asks[r])
        node, largest = plan.largest_free(res)
        what = (
            f"{can} of {min_member} tasks can be placed; {name} needs {fmt_num(asks[res])} {res} on one node, "
            f"the largest free is {fmt_num(largest)}"
        )
        most = f"the most free {res} on one node: {fmt_num(largest)} on {node or 'no node'}"
        lines = [*evidence, most, *table[:MAX_ROWS]]
        lines += [f"  would place {p} on {n}" for p, n in plan.placed[:MAX_ROWS]]
        for p, a in plan.unplaced:
            lines.append(f"  cannot place {p}: asks {res_text({r: fmt_num(v) for r, v in a.items()})}")
        yield code.detect(
            subject,
            {
                "what": what,
                "placed": str(can),
                "resource": res,
                **params,
            },
            role="gpu",
            evidence=lines,
        )
        return
    status = pg.get("status") or {}
    conds = [*(status.get("conditions") or []), *(status.get("schedulingConditions") or [])]
    cond = next((c for c in conds if "Unschedulable" in str(c.get("type")) and c.get("status", "True") == "True"), None)
    if cond is not None:
        what = f"the GPUs fit, but the scheduler says: {cond.get('message')}"
        yield code.detect(
            subject,
            {
                "what": what,
                "placed": str(can),
                **params,
            },
            role="other",
            evidence=[*evidence, *table[:MAX_ROWS]],
        )


