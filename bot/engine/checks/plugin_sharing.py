"""GPU sharing (time-slicing, MPS) configured one way, the pod written for another.

With time-slicing or MPS the device plugin hands out replicas of each GPU. With renameByDefault
the replicas are advertised as nvidia.com/gpu.shared, so a pod asking nvidia.com/gpu finds none
(and the reverse). A replica is not a GPU: asking 2 gives two slots that may be the same card,
and with failRequestsGreaterThanOne (always with MPS) the plugin refuses the allocation, which the
kubelet reports as UnexpectedAdmissionError: "maximum request size for shared resources is 1". A
request larger than a node's replicas can never fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import fmt_num, pod_ref
from bot.engine.checks._plugin import eligible_nodes, nodes_text
from bot.engine.facts import Facts
from bot.kube.gpu_stack import (
    SHARED_TOO_LARGE,
    allocatable,
    is_mig_resource,
    is_shared,
    offered,
    shared_twin,
    sharing,
)
from bot.kube.resources import gpu_family, pod_gpu_requests


class SharingAsk(TypedDict):
    pod: str
    resource: str
    requested: str


class SharingMisconfigured(SharingAsk):
    what: str
    strategy: str
    value: str
    nodes: str
    count: int
    message: str


SHARING_MISCONFIGURED = Code("SHARING_MISCONFIGURED", SharingMisconfigured)

Obj = dict[str, Any]
_QUOTED_RESOURCE = re.compile(r"""["'](?P<res>[a-z0-9.\-]+/[a-z0-9.\-]+)["':]""")


def _node_line(facts: Facts, name: str) -> str:
    node = facts.nodes[name]
    strategy, replicas = sharing(node)
    offers = ", ".join(f"{r}: {fmt_num(a)}" for r, a in sorted(offered(node).items())) or "nothing allocatable"
    return f"{name}: offers {offers}; sharing {strategy}, {replicas} replica(s) per GPU"


def _admission_refusal(facts: Facts, pod: Obj) -> tuple[str, str] | None:
    """(the refusal text, the resource it names) from the pod's status or events."""
    status = pod.get("status") or {}
    texts = [str(status.get("message") or "")]
    texts += [str(e.get("message") or "") for e in facts.events.pod]
    for text in texts:
        if SHARED_TOO_LARGE.search(text):
            match = _QUOTED_RESOURCE.search(text)
            return text[:600], (match.group("res") if match else "")
    return None


def _refused(facts: Facts, pod: Obj) -> Iterator[Detection]:
    found = _admission_refusal(facts, pod)
    if found is None:
        return
    text, named = found
    asks = pod_gpu_requests(pod)
    resource = named or next((r for r in sorted(asks) if gpu_family(r) == "nvidia"), "nvidia.com/gpu")
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    evidence = [f"{pod_ref(pod)} asks {resource}: {fmt_num(asks.get(resource, 0))}", f"kubelet: {text}"]
    if node in facts.nodes:
        evidence.append(_node_line(facts, node))
    strategy = sharing(facts.nodes[node])[0] if node in facts.nodes else "time-slicing or MPS"
    yield SHARING_MISCONFIGURED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "resource": resource,
            "requested": fmt_num(asks.get(resource, 0)),
            "what": f"the device plugin refused {fmt_num(asks.get(resource, 0))} {resource} for {pod_ref(pod)}, "
            "at most 1 per container",
            "strategy": strategy,
            "value": resource,
            "nodes": node or "its node",
            "count": 1,
            "message": text[:300],
        },
        evidence=evidence,
    )


def _pending(facts: Facts, pod: Obj) -> Iterator[Detection]:
    eligible = eligible_nodes(facts, pod)
    ref = pod_ref(pod)
    for resource, want in sorted(pod_gpu_requests(pod).items()):
        if gpu_family(resource) != "nvidia" or is_mig_resource(resource):
            continue
        have = [n for n in eligible if allocatable(facts.nodes[n], resource) > 0]
        twin = shared_twin(resource)
        common: SharingAsk = {"pod": ref, "resource": resource, "requested": fmt_num(want)}
        if not have and twin:
            renamed = [n for n in eligible if allocatable(facts.nodes[n], twin) > 0]
            if renamed:
                why = "renameByDefault is on" if twin.endswith(".shared") else "renameByDefault is off"
                yield SHARING_MISCONFIGURED.detect(
                    pod_subject(pod),
                    {
                        "what": f"{resource} asked, the nodes advertise {twin} ({why})",
                        "strategy": ", ".join(sorted({sharing(facts.nodes[n])[0] for n in renamed})),
                        "value": twin,
                        "nodes": nodes_text(renamed),
                        "count": len(renamed),
                        "message": "",
                        **common,
                    },
                    evidence=[f"{ref} asks {resource}: {fmt_num(want)}",
                              *(_node_line(facts, n) for n in renamed[:20])],
                )
            continue
        shared = [n for n in have if is_shared(facts.nodes[n], resource)]
        if want <= 1 or not shared:
            continue
        most = max(allocatable(facts.nodes[n], resource) for n in shared)
        strategies = sorted({sharing(facts.nodes[n])[0] for n in shared})
        evidence = [f"{ref} asks {resource}: {fmt_num(want)}", *(_node_line(facts, n) for n in shared[:20])]
        if want > most and len(shared) == len(have):
            what, role = f"{fmt_num(want)} {resource} asked, no node has more than {fmt_num(most)} replicas", ""
        elif "mps" in strategies:
            what, role = f"{fmt_num(want)} {resource} asked, with MPS a container may take only 1 replica", ""
        else:
            what, role = (f"{fmt_num(want)} replicas of a time-sliced {resource} asked: slots, not extra GPUs"
                          ), "replicas"
        yield SHARING_MISCONFIGURED.detect(
            pod_subject(pod),
            {
                "what": what,
                "strategy": ", ".join(strategies),
                "value": resource,
                "nodes": nodes_text(shared),
                "count": len(shared),
                "message": "",
                **common,
            },
            role=role,
            evidence=evidence,
        )


def run(facts: Facts) -> Iterator[Detection]:
    """SHARING_MISCONFIGURED: renamed shared resource, a refused multi-replica request, replicas vs requests."""
    pod = facts.pod
    if pod is None:
        return
    refused = list(_refused(facts, pod))
    if refused:
        yield from refused
        return
    if facts.pending_pod is not None:
        yield from _pending(facts, facts.pending_pod)


CHECK = Check(
    name="plugin.sharing",
    reads=("pod", "pending_pod", "events", "nodes", "components"),
    emits=(SHARING_MISCONFIGURED,),
    run=run,
)
