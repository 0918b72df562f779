"""A vGPU pod handled by a scheduler that does not know vGPU: HAMi's or tkestack's was bypassed.

HAMi: the pod asks nvidia.com/gpumem / gpucores (or nvidia.com/gpu on nodes only HAMi's device
plugin serves) but still names default-scheduler, because HAMi's mutating webhook did not rewrite
it to hami-scheduler (``hami.io/webhook: ignore`` on the pod or namespace, no HAMi scheduler, the
webhook unreachable with failurePolicy Ignore, ``--force-overwrite-default-scheduler=false``).
The default scheduler then finds no node with any nvidia.com/gpumem ("Insufficient"), or binds
the pod to a HAMi node whose device plugin refuses it ("no binding pod found on node").

tkestack: the pod asks tencent.com/vcuda-* and was bound without gpu-admission's predicate
annotations, so a scheduler placed it by adding up vcuda-core per node instead of per card.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection, pod_subject
from bot.engine.checks._common import event_time, pod_ref
from bot.engine.checks._vgpu import HamiInstall, hami_install, pod_ready, pod_state, ref, vcuda_admission, vgpu_asks
from bot.engine.facts import Facts
from bot.kube.objects import Obj, meta_of
from bot.kube.resources import node_gpu_capacity, pod_gpu_requests, vgpu_families
from bot.kube.vgpu import HAMI_WEBHOOK_LABEL, hami_pod_handled, vcuda_predicated, webhook_ignored


class VgpuSchedulerBypassed(TypedDict):
    pod: str
    vendor: str
    scheduler: str
    expected: str
    resource: str
    why: str
    fix: str


VGPU_SCHEDULER_BYPASSED = Code("VGPU_SCHEDULER_BYPASSED", VgpuSchedulerBypassed)

DEFAULT = "default-scheduler"


def _scheduler(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("schedulerName") or DEFAULT)


def _symptoms(facts: Facts, pod: Obj) -> list[str]:
    """What the pod shows of the wrong scheduler: its events and its status."""
    lines = []
    for event in sorted(facts.events.pod, key=event_time, reverse=True):
        reason = str(event.get("reason") or "")
        if reason not in ("FailedScheduling", "Scheduled", "UnexpectedAdmissionError"):
            continue
        source_obj = event.get("source")
        source = (source_obj.get("component") if isinstance(source_obj, dict) else None) \
            or event.get("reportingComponent") or "?"
        lines.append(f"event {reason} from {source}: {str(event.get('message') or '')[:400]}")
        if len(lines) >= 3:
            break
    status = pod.get("status") or {}
    message = str(status.get("message") or "")
    if (status.get("reason") or message) and not any(message and message[-60:] in line for line in lines):
        lines.append(f"pod status: {status.get('phase')} {status.get('reason', '')}: "
                     f"{str(status.get('message') or '')[:400]}")
    return lines


def _hami_owns_gpu(facts: Facts, pod: Obj, hami: HamiInstall) -> bool:
    """A pod asking only nvidia.com/gpu is HAMi's when every node offering it is a HAMi node."""
    if "nvidia.com/gpu" not in pod_gpu_requests(pod):
        return False
    hami_nodes = hami.hami_nodes(facts)
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        return str(bound) in hami_nodes
    offering = {n for n, o in facts.nodes.items() if node_gpu_capacity(o).get("nvidia.com/gpu", (0.0, 0.0))[0] > 0}
    return bool(offering) and offering <= hami_nodes


def _hami_why(facts: Facts, pod: Obj, hami: HamiInstall) -> tuple[str, str, list[str]]:
    """(why the webhook did not take it, the fix, evidence)."""
    meta = meta_of(pod)
    ns = str(meta.get("namespace") or "")
    expected = hami.scheduler_name
    namespace = facts.namespaces.get(ns)
    if webhook_ignored(pod):
        return (
            f"the pod carries the label {HAMI_WEBHOOK_LABEL}=ignore, which HAMi's webhook objectSelector excludes",
            f"remove {HAMI_WEBHOOK_LABEL}=ignore from the pod template (or set spec.schedulerName: {expected}) "
            "and recreate the pod",
            [f"pod label {HAMI_WEBHOOK_LABEL}=ignore"],
        )
    if webhook_ignored(namespace):
        return (
            f"namespace {ns} carries the label {HAMI_WEBHOOK_LABEL}=ignore, which HAMi's webhook "
            "namespaceSelector excludes",
            f"kubectl label namespace {ns} {HAMI_WEBHOOK_LABEL}- (or set spec.schedulerName: {expected} in the pod "
            "template), then recreate the pod",
            [f"namespace {ns} label {HAMI_WEBHOOK_LABEL}=ignore"],
        )
    if not hami.installed:
        return (
            "no HAMi scheduler runs in this cluster (no hami-scheduler Deployment or pod), so neither its webhook "
            "nor its scheduler exists",
            "install or re-enable HAMi's scheduler (the hami Helm chart), or ask only for resources this cluster "
            "offers",
            ["HAMi scheduler Deployments/pods found: none"]
            + [f"HAMi device plugin found: {ref(p)}" for p in hami.plugins[:3]],
        )
    found = [f"HAMi scheduler: {ref(o)}" for o in hami.schedulers[:3]]
    found += [f"HAMi scheduler pod {ref(p)}: {pod_state(p)}" for p in hami.scheduler_pods[:3]]
    if hami.force_overwrite is False:
        return (
            "HAMi's scheduler runs with --force-overwrite-default-scheduler=false, so its webhook leaves pods that "
            "name default-scheduler alone (the API server fills that name in before the webhook sees the pod)",
            f"set scheduler.forceOverwriteDefaultScheduler=true in the HAMi chart, or spec.schedulerName: {expected} "
            "in the pod template",
            [*found, "--force-overwrite-default-scheduler=false"],
        )
    ready = [p for p in hami.scheduler_pods if pod_ready(p)]
    if hami.scheduler_pods and not ready:
        return (
            "HAMi's scheduler pod is not ready, so the API server could not call its webhook, and the webhook's "
            "failurePolicy Ignore (the chart default) let the pod through unchanged",
            "get the hami-scheduler pod Running and Ready (kubectl describe and logs), then recreate the pod",
            found,
        )
    return (
        "HAMi's scheduler runs, yet its webhook did not rewrite the pod: most likely the API server could not "
        "reach it and failurePolicy Ignore hid the error, or the MutatingWebhookConfiguration is missing or "
        "excludes this namespace",
        "look for 'failed calling webhook \"vgpu.hami.io\"' in the kube-apiserver log, check "
        "kubectl get mutatingwebhookconfigurations | grep -i hami and that the API server reaches the "
        "hami-scheduler Service, then recreate the pod",
        found,
    )


def _hami(facts: Facts, pod: Obj, hami: HamiInstall, by_resource: bool) -> Iterator[Detection]:
    actual, expected = _scheduler(pod), hami.scheduler_name
    if actual != DEFAULT or actual == expected or hami_pod_handled(pod):
        return
    why, fix, found = _hami_why(facts, pod, hami)
    evidence = [
        f"{pod_ref(pod)} asks {vgpu_asks(pod, ['hami'])}"
        + ("" if by_resource else " on nodes whose nvidia.com/gpu only HAMi's device plugin offers"),
        f"spec.schedulerName: {actual}; HAMi's scheduler is {expected}",
        *found,
        *_symptoms(facts, pod),
    ]
    if pod_ready(pod):
        evidence.append("the pod runs without HAMi's allocation annotations: its memory and core limits are not "
                        "applied")
    yield VGPU_SCHEDULER_BYPASSED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "vendor": "HAMi",
            "scheduler": actual,
            "expected": expected,
            "resource": vgpu_asks(pod, ["hami"]),
            "why": why,
            "fix": fix,
        },
        evidence=evidence,
    )


def _vcuda(facts: Facts, pod: Obj) -> Iterator[Detection]:
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or vcuda_predicated(pod):
        return
    actual = _scheduler(pod)
    admission = vcuda_admission(facts)
    expected = "gpu-admission"  # tkestack's extender, called by whichever kube-scheduler is configured with it
    if not admission:
        why = (f"no gpu-admission (tkestack's scheduler extender) runs in this cluster, so {actual} placed the pod by "
               "adding up vcuda-core over the whole node, not per card")
        fix = ("deploy gpu-admission and add it as an extender (filterVerb predicates) to the scheduler that serves "
               "these pods")
    else:
        why = (f"gpu-admission runs, but {actual} did not consult it: its scheduler configuration has no extender "
               "pointing at gpu-admission")
        fix = (f"add gpu-admission as an extender to {actual}'s configuration (KubeSchedulerConfiguration extenders; "
               "--policy-config-file is gone since Kubernetes 1.23), or schedule these pods with the scheduler "
               "that has it")
    yield VGPU_SCHEDULER_BYPASSED.detect(
        pod_subject(pod),
        {
            "pod": pod_ref(pod),
            "vendor": "tkestack gpu-manager",
            "scheduler": actual,
            "expected": expected,
            "resource": vgpu_asks(pod, ["vcuda"]),
            "why": why,
            "fix": fix,
        },
        evidence=[
            f"{pod_ref(pod)} asks {vgpu_asks(pod, ['vcuda'])}; bound to {node} by {actual}",
            "annotations tencent.com/predicate-node and tencent.com/predicate-time: absent (gpu-admission never "
            "placed it)",
            "gpu-admission found: " + (", ".join(ref(o) for o in admission[:3]) or "none"),
            *_symptoms(facts, pod),
        ],
    )


def run(facts: Facts) -> Iterator[Detection]:
    """VGPU_SCHEDULER_BYPASSED for a HAMi or vcuda pod that the scheduler meant for it never saw."""
    pod = facts.pod
    if pod is None or (pod.get("status") or {}).get("phase") == "Succeeded":
        return
    families = vgpu_families(pod)
    hami = hami_install(facts)
    if "hami" in families:
        yield from _hami(facts, pod, hami, by_resource=True)
    elif (hami.installed or hami.plugin_pods) and _hami_owns_gpu(facts, pod, hami):
        yield from _hami(facts, pod, hami, by_resource=False)
    if "vcuda" in families:
        yield from _vcuda(facts, pod)


CHECK = Check(
    name="sched.vgpu_bypass",
    reads=("pod", "events", "namespaces", "nodes", "components"),
    emits=(VGPU_SCHEDULER_BYPASSED,),
    run=run,
)
