"""HAMi's scheduler has no card registration for the GPU nodes a pending HAMi pod could use.

HAMi's scheduler only places pods on nodes whose device plugin wrote
``hami.io/node-nvidia-register`` and keeps answering the ``hami.io/node-handshake``; every other
node is "node unregistered" in its FailedScheduling message. The usual causes, per node: the node
lacks the label the device-plugin DaemonSet selects (``gpu=on``), the plugin pod is missing or
crash-looping, the plugin runs but found no card, or the scheduler dropped the node
(``Deleted_<time>``) after the plugin stopped answering for a minute.

GPU nodes that run another NVIDIA device plugin and lack the HAMi label are left out: they are
not meant for HAMi. A Requesting_ handshake is not judged by its age: HAMi writes it in the
scheduler's local time without a zone, and the scheduler itself turns a stale one into Deleted_.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import pod_ref
from bot.engine.checks._vgpu import HamiInstall, hami_install, name, pod_ready, pod_state, ref
from bot.engine.facts import Facts
from bot.kube.gpu import is_gpu_component
from bot.kube.objects import Obj, labels_of
from bot.kube.resources import pod_gpu_requests
from bot.kube.vgpu import HAMI_HANDSHAKE, HAMI_REGISTER, Registration, node_registration


class VgpuNodeNotRegistered(TypedDict):
    pod: str
    scheduler: str
    nodes: str
    count: int
    value: str
    label: str
    fix: str


VGPU_NODE_NOT_REGISTERED = Code("VGPU_NODE_NOT_REGISTERED", VgpuNodeNotRegistered)



def _labels(node: Obj) -> dict[str, str]:
    return {str(k): str(v) for k, v in (labels_of(node)).items()}


def _other_plugin(facts: Facts, node: str, hami: HamiInstall) -> str | None:
    """A non-HAMi GPU device plugin pod on the node (the node is served by another stack)."""
    for p in facts.components.pods:
        if (p.get("spec") or {}).get("nodeName") != node or p in hami.plugin_pods:
            continue
        if "device-plugin" in name(p) and is_gpu_component(name(p)):
            return ref(p)
    return None


def _diagnose(node: str, obj: Obj, reg: Registration, hami: HamiInstall) -> tuple[str, str]:
    """(what is wrong on the node, what fixes it)."""
    selector = hami.node_selector
    label_text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    missing = {k: v for k, v in selector.items() if _labels(obj).get(k) != v}
    pods = hami.plugin_pods_on(node)
    if reg.state == "dropped":
        when = reg.handshake.when or "?"
        if pods and all(pod_ready(p) for p in pods):
            return (f"HAMi's scheduler marked it Deleted_ at {when} and the handshake stayed there, although its "
                    f"device plugin {ref(pods[0])} is Running and ready",
                    f"clear the stuck handshake so the plugin registers again: kubectl annotate node {node} "
                    f"{HAMI_HANDSHAKE}-")
        state = ", ".join(f"{ref(p)} is {pod_state(p)}" for p in pods) or "no device-plugin pod runs there"
        return (f"HAMi's scheduler dropped its registration at {when} after the device plugin stopped answering "
                f"the handshake ({state})",
                f"get the hami-device-plugin pod on {node} Running and read its log; it registers again within 30 s")
    if not hami.plugins and not hami.plugin_pods:
        return ("no HAMi device-plugin DaemonSet exists, so nothing registers the node's cards",
                "install or enable HAMi's device plugin (devicePlugin.enabled in the hami chart)")
    if missing and not pods:
        return (f"lacks the label {label_text}, so the hami-device-plugin DaemonSet does not run there",
                f"kubectl label node {node} {label_text}")
    if not pods:
        ds = ", ".join(ref(d) for d in hami.plugins[:2]) or "hami-device-plugin"
        return (f"has no hami-device-plugin pod although it carries {label_text}",
                f"check why DaemonSet {ds} skips {node}: kubectl describe daemonset (taints it does not tolerate, "
                "a failing pod creation)")
    bad = [p for p in pods if not pod_ready(p)]
    if bad:
        p = bad[0]
        return (f"its hami-device-plugin pod {ref(p)} is {pod_state(p)}",
                f"read the plugin's log: kubectl logs -n {ref(p).split('/')[0]} {name(p)} --all-containers "
                "(NVML or driver errors keep it from registering)")
    what = {"missing": f"has no {HAMI_REGISTER} annotation", "empty": "registered no card",
            "malformed": f"has a {HAMI_REGISTER} annotation HAMi cannot read"}.get(reg.state, reg.state)
    return (f"its hami-device-plugin runs but {what}",
            f"read the plugin's log on {node} (kubectl logs --all-containers): it found no usable card")


def run(facts: Facts) -> Iterator[Detection]:
    """VGPU_NODE_NOT_REGISTERED; role ``partial`` when other GPU nodes are registered and the
    scheduler has not (yet) named unregistered nodes among its reasons."""
    pod = facts.pending_pod
    if pod is None or not pod_gpu_requests(pod):
        return
    hami = hami_install(facts)
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
    if scheduler != hami.scheduler_name:
        return
    unregistered_in_message = sum(
        r.count for msg in facts.events.scheduling[:1] for r in msg.by_category("vgpu_unregistered")
    )
    scope = facts.gpu_nodes or sorted(facts.nodes)
    checked: dict[str, Registration] = {}
    for node in scope:
        obj = facts.nodes[node]
        reg = node_registration(obj)
        if not reg.registered and _other_plugin(facts, node, hami) and not hami.plugin_pods_on(node):
            selector = hami.node_selector
            if any(_labels(obj).get(k) != v for k, v in selector.items()):
                continue  # served by another NVIDIA stack and not labelled for HAMi: not HAMi's node
        checked[node] = reg
    unregistered = sorted(n for n, r in checked.items() if not r.registered)
    if not unregistered:
        return
    registered = sorted(n for n, r in checked.items() if r.registered)
    evidence = [f"{pod_ref(pod)} is handled by {scheduler}"]
    for msg in facts.events.scheduling[:1]:
        evidence.append(f"scheduler: {msg.raw[:500]}")
    fixes: list[str] = []
    for node in unregistered[:20]:
        problem, fix = _diagnose(node, facts.nodes[node], checked[node], hami)
        reg = checked[node]
        shown = f"{HAMI_HANDSHAKE}: {reg.handshake.raw}" if reg.state == "dropped" else reg.describe()
        evidence.append(f"{node}: {problem} ({shown})")
        if fix not in fixes:
            fixes.append(fix)
    evidence += [f"{n}: {checked[n].describe()}" for n in registered[:10]]
    if not facts.gpu_nodes:
        evidence.append("no node looks like a GPU node (no GPU resource, GPU label or device-plugin pod)")
    label = ",".join(f"{k}={v}" for k, v in sorted(hami.node_selector.items()))
    # The cause when HAMi knows no node at all, or when its own message counts unregistered nodes
    # among those the pod failed on; otherwise (no message yet) a warning beside other reasons.
    cause = not registered or unregistered_in_message > 0
    yield VGPU_NODE_NOT_REGISTERED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "scheduler": scheduler,
            "nodes": ", ".join(unregistered[:10])
            + (f" and {len(unregistered) - 10} more" if len(unregistered) > 10 else ""),
            "count": len(unregistered),
            "value": ", ".join(registered[:10]) or "none",
            "label": label,
            "fix": "; ".join(fixes[:4]),
        },
        role="" if cause else "partial",
        evidence=evidence
        + ([f"the scheduler's own count of unregistered nodes: {unregistered_in_message}"]
           if unregistered_in_message else []),
    )


CHECK = Check(
    name="sched.vgpu_registration",
    reads=("pending_pod", "events", "nodes", "gpu_nodes", "components"),
    emits=(VGPU_NODE_NOT_REGISTERED,),
    run=run,
)
