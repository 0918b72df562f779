"""A pod of a Volcano gang waits: the gang's story in one finding, not one report per pod.

Volcano binds none of a PodGroup's pods until ``minMember`` of them can be placed at once, and
only enqueues the group when its Queue is Open and has room under its capability. Each pod only
says "pod group is not ready"; the PodGroup's condition says "3/4 tasks in gang unschedulable".
This check reads the PodGroup and its Queue, places the gang's waiting pods on the nodes' free
GPUs (``bot.kube.gang``), and says how many tasks can be placed and which cannot, and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bot.engine.check import Check, Detection, detect, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.facts import Facts
from bot.engine.queue_facts import GangFacts
from bot.kube.gang import free_gpus, place
from bot.kube.kueue import condition
from bot.kube.resources import node_gpu_capacity, quantity_or_none

Obj = dict[str, Any]
OPEN = ("Open", "")
MAX_ROWS = 12


def _res(values: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "none"


def _queue_lines(g: GangFacts) -> list[str]:
    q = g.queue or {}
    spec, status = q.get("spec") or {}, q.get("status") or {}
    return [
        f"Queue {g.queue_name}: state {status.get('state') or '?'}, capability {_res(spec.get('capability'))}, "
        f"deserved {_res(spec.get('deserved'))}, allocated {_res(status.get('allocated'))}, "
        f"reclaimable {spec.get('reclaimable', True)}"
    ]


def _group_lines(g: GangFacts) -> list[str]:
    pg = g.pod_group or {}
    spec, status = pg.get("spec") or {}, pg.get("status") or {}
    lines = [
        f"PodGroup {g.group_name}: phase {status.get('phase') or '?'}, minMember {spec.get('minMember', '?')}, "
        f"minResources {_res(spec.get('minResources'))}, running {status.get('running', 0)}"
    ]
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("message"):
            lines.append(f"PodGroup {cond.get('type')} ({cond.get('reason')}): {cond.get('message')}")
    return lines


def _over_capability(g: GangFacts) -> list[str]:
    """Resources where allocated plus the group's minResources exceed the Queue's capability."""
    q = g.queue or {}
    cap = (q.get("spec") or {}).get("capability") or {}
    allocated = (q.get("status") or {}).get("allocated") or {}
    need = ((g.pod_group or {}).get("spec") or {}).get("minResources") or {}
    out = []
    for res, limit in sorted(cap.items()):
        want = quantity_or_none(need.get(res))
        top = quantity_or_none(limit)
        if want is None or top is None or want == 0:
            continue
        have = quantity_or_none(allocated.get(res)) or 0
        if have + want > top:
            out.append(f"{res}: allocated {allocated.get(res, 0)} + the gang's {need.get(res)} > capability {limit}")
    return out


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


def _gang(facts: Facts, g: GangFacts, subject: str, base: dict[str, str]) -> Iterator[Detection]:
    pg = g.pod_group or {}
    min_member = int(((pg.get("spec") or {}).get("minMember")) or 1)
    waiting = [p for p in g.pods if not (p.get("spec") or {}).get("nodeName")
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    bound = [p for p in g.pods if (p.get("spec") or {}).get("nodeName")
             and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    evidence = _group_lines(g) + _queue_lines(g)
    params = {**base, "min_member": str(min_member), "count": str(len(g.pods))}
    if len(g.pods) < min_member:
        yield detect("VOLCANO_GANG_UNSCHEDULABLE", subject, role="short",
                     what=f"only {len(g.pods)} pod(s) of the gang exist and it needs {min_member} (minMember)",
                     placed=str(len(g.pods)), evidence=evidence, **params)
        return
    if not waiting:
        return
    free = _free(facts)
    plan = place(waiting, free)
    can = len(bound) + len(plan.placed)
    table = [f"{n}: free {_res({r: fmt_num(v) for r, v in room.items()})}" for n, room in sorted(free.items())]
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
        lines += [f"  cannot place {p}: asks {_res({r: fmt_num(v) for r, v in a.items()})}" for p, a in plan.unplaced]
        yield detect("VOLCANO_GANG_UNSCHEDULABLE", subject, role="gpu", what=what, placed=str(can),
                     resource=res, evidence=lines, **params)
        return
    cond = condition(pg, "Unschedulable")
    if cond is not None and cond.get("status") == "True":
        what = f"the GPUs fit, but Volcano says: {cond.get('message')}"
        yield detect("VOLCANO_GANG_UNSCHEDULABLE", subject, role="other", what=what, placed=str(can),
                     evidence=[*evidence, *table[:MAX_ROWS]], **params)


def run(facts: Facts) -> Iterator[Detection]:
    """VOLCANO_* for a pod whose gang Volcano holds; nothing for other pods or a running gang."""
    g = facts.queues.volcano
    pod = facts.target.pod
    if g is None or not g.installed or pod is None:
        return
    if (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed"):
        return
    subject = pod_subject(pod)
    ns = str((pod.get("metadata") or {}).get("namespace") or "")
    base = {"pod": pod_ref(pod), "namespace": ns, "group": g.group_name, "queue": g.queue_name}
    if g.pod_group is None:
        line = f"annotation scheduling.k8s.io/group-name={g.group_name}: no such PodGroup in {ns}"
        yield detect("VOLCANO_PODGROUP_MISSING", subject, evidence=[line], **base)
        return
    if g.queue is None:
        yield detect("VOLCANO_QUEUE_CLOSED", subject, role="missing", queue_state="missing",
                     evidence=_group_lines(g) + [f"Queue {g.queue_name} does not exist"], **base)
        return
    state = str(((g.queue.get("status") or {}).get("state")) or "")
    if state not in OPEN:
        lines = _group_lines(g) + _queue_lines(g)
        yield detect("VOLCANO_QUEUE_CLOSED", subject, queue_state=state, evidence=lines, **base)
        return
    phase = str(((g.pod_group.get("status") or {}).get("phase")) or "")
    over = _over_capability(g) if phase in ("Pending", "") else []
    if over:
        yield detect("VOLCANO_QUEUE_OVER_CAPABILITY", subject, what="; ".join(over),
                     evidence=_group_lines(g) + _queue_lines(g) + over, **base)
        return
    yield from _gang(facts, g, subject, base)


CHECK = Check(
    name="queue.volcano",
    reads=("target", "queues", "nodes", "node_pods"),
    emits=("VOLCANO_PODGROUP_MISSING", "VOLCANO_QUEUE_CLOSED", "VOLCANO_QUEUE_OVER_CAPABILITY",
           "VOLCANO_GANG_UNSCHEDULABLE"),
    run=run,
)
