"""The common non-GPU causes (issue 28.3) on hand-built facts: image pulls, runtime handlers and
RuntimeClasses, CUDA newer than the driver, workload creation refused, topology spread, DRA claims.
Each parser on the exact words the emitting project prints, each check on Facts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.engine.checks import (
    pod_cuda_driver,
    pod_image_pull,
    pod_runtime_handler,
    sched_dra_claims,
    sched_topology_spread,
    workload_create_refused,
)
from bot.engine.facts import Facts
from bot.kube import create_refusal, cuda_compat, dra, image_pull, runtime_class
from bot.kube.scheduling import parse_scheduling_message
from bot.kube.topology_spread import evaluate
from tests.facts import facts as make_facts

Obj = dict[str, Any]
NS = "ml"

PULL_NOT_FOUND = ('Failed to pull image "nvidia/cuda": rpc error: code = NotFound desc = failed to pull and unpack '
                  'image "docker.io/nvidia/cuda:latest": failed to resolve reference "docker.io/nvidia/cuda:latest": '
                  "docker.io/nvidia/cuda:latest: not found")
PULL_RATE = ('Failed to pull image "x:1": rpc error: code = Unknown desc = Error reading manifest latest in '
             "docker.io/x: toomanyrequests: You have reached your pull rate limit. You may increase the limit by "
             "authenticating")
PULL_401 = ('Failed to pull image "nvcr.io/a/b:1": rpc error: code = Unknown desc = failed to pull and unpack image: '
            "pulling from host nvcr.io failed with status code [manifests 1]: 401 Unauthorized")
HOOK = ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
        "newer version, or use an earlier cuda container: unknown")


def _pod(name: str = "p", *, node: str | None = "g1", image: str = "img:1", waiting: Obj | None = None,
         terminated: Obj | None = None, phase: str = "Pending", ready: bool = False, gpu: bool = True,
         spec: Obj | None = None, labels: Obj | None = None) -> Obj:
    container: Obj = {"name": "c", "image": image}
    if gpu:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    state: Obj = {"waiting": waiting} if waiting else {"running": {}} if ready else {}
    cs: Obj = {"name": "c", "ready": ready, "state": state}
    if terminated:
        cs["lastState"] = {"terminated": terminated}
    body: Obj = {"containers": [container], **(spec or {})}
    if node:
        body["nodeName"] = node
    return {"metadata": {"name": name, "namespace": NS, "uid": f"u-{name}", "labels": labels or {}},
            "spec": body,
            "status": {"phase": phase, "containerStatuses": [cs],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _event(message: str, *, reason: str = "Failed", kind: str = "Pod", name: str = "p",
           when: str = "2026-05-07T10:00:00Z") -> Obj:
    return {"reason": reason, "message": message, "involvedObject": {"kind": kind, "name": name},
            "lastTimestamp": when, "count": 3, "source": {"component": "kubelet"}}


def _facts(pod: Obj | None, *, events: Sequence[Obj] = (), owner_events: Sequence[Obj] = (), owners: Sequence[Obj] = (),
           workload: Obj | None = None, nodes: Sequence[Obj] = (), namespaces: Sequence[Obj] = (),
           controllers: Sequence[Obj] = (), peers: Sequence[Obj] = (), tables: dict[str, Any] | None = None,
           kind: str = "Pod", name: str = "p") -> Facts:
    # no batch system nor DRA API (the builder's default): what the loader finds on a plain cluster
    return make_facts(kind=kind, name=name, pod=pod, workload=workload, owners=owners, events=events,
                      owner_events=owner_events, nodes=nodes, namespaces=namespaces, controllers=controllers,
                      peers=peers, tables=tables or {})


# ------------------------------------------------------------------ image pull

BACKOFF = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nvidia/cuda"'}


def test_pull_causes_from_the_registry_words() -> None:
    assert image_pull.classify("ErrImagePull", PULL_NOT_FOUND) == "not_found"
    assert image_pull.classify("ErrImagePull", PULL_RATE) == "rate_limited"
    assert image_pull.classify("ErrImagePull", PULL_401) == "auth"
    assert image_pull.classify("ErrImagePull", "dial tcp 10.0.0.1:443: i/o timeout") == "network"
    assert image_pull.classify("ImagePullBackOff", 'Back-off pulling image "x"') == "unknown"
    assert image_pull.classify("InvalidImageName", "") == "invalid_name"


def test_backoff_reads_the_newest_failed_pull_event() -> None:
    pod = _pod(image="nvidia/cuda", waiting=BACKOFF)
    old = _event('Failed to pull image "nvidia/cuda": dial tcp: i/o timeout', when="2026-05-07T09:00:00Z")
    [failure] = image_pull.pull_failures(pod, [old, _event(PULL_NOT_FOUND)])
    assert (failure.cause, failure.image, failure.reason) == ("not_found", "nvidia/cuda", "ImagePullBackOff")


def test_image_pull_check_names_cause_and_row() -> None:
    pod = _pod(image="nvidia/cuda", waiting=BACKOFF)
    table = {"image_pull_causes": [{"cause": "not_found", "short": "no such tag", "meaning": "m", "look_at": "l"}]}
    [d] = list(pod_image_pull.CHECK.run(_facts(pod, events=[_event(PULL_NOT_FOUND)], tables=table)))
    assert (d.code, d.role, d.params["what"], d.params["image"]) == ("IMAGE_PULL_FAILED", "not_found", "no such tag",
                                                                      "nvidia/cuda")
    assert not list(pod_image_pull.CHECK.run(_facts(_pod(ready=True, phase="Running"))))


# ------------------------------------------------------------------ runtime handler / RuntimeClass

def test_runtime_refusals_parsed() -> None:
    sandbox = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
               'no runtime for "nvidia" is configured')
    assert runtime_class.parse(sandbox) == runtime_class.RuntimeRefusal("handler", "nvidia", sandbox)
    crio = "failed to find runtime handler nvidia from runtime list map[crun:0x1 runc:0x2]"
    assert runtime_class.parse(crio).kind == "handler"  # type: ignore[union-attr]
    rejected = 'Error creating: pods "x-" is forbidden: pod rejected: RuntimeClass "nvidia" not found'
    assert runtime_class.parse(rejected).kind == "class"  # type: ignore[union-attr]
    assert runtime_class.parse("Back-off restarting failed container") is None


def test_runtime_check_handler_class_and_not_set() -> None:
    pod = _pod(waiting={"reason": "ContainerCreating"}, spec={"runtimeClassName": "nvidia"})
    sandbox = _event('failed to get sandbox runtime: no runtime for "nvidia" is configured',
                     reason="FailedCreatePodSandBox")
    [d] = list(pod_runtime_handler.CHECK.run(_facts(pod, events=[sandbox])))
    assert (d.code, d.params["runtime"], d.params["node"]) == ("RUNTIME_HANDLER_MISSING", "nvidia", "g1")

    rs = {"kind": "ReplicaSet", "metadata": {"name": "w-1"}}
    refused = _event('Error creating: pods "w-1-" is forbidden: pod rejected: RuntimeClass "nvidia" not found',
                     reason="FailedCreate", kind="ReplicaSet", name="w-1")
    [d] = list(pod_runtime_handler.CHECK.run(_facts(None, owner_events=[refused], owners=[rs], workload=rs,
                                                    kind="Deployment", name="w")))
    assert d.code == "RUNTIME_CLASS_MISSING"

    plugin = {"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"},
              "spec": {"template": {"spec": {"runtimeClassName": "nvidia"}}}}
    lost = _pod(phase="Running", waiting={"reason": "CrashLoopBackOff"},
                terminated={"reason": "StartError",
                            "message": 'exec: "nvidia-smi": executable file not found in $PATH'})
    [d] = list(pod_runtime_handler.CHECK.run(_facts(lost, controllers=[plugin])))
    assert (d.code, d.params["runtime"]) == ("RUNTIME_CLASS_NOT_SET", "nvidia")
    # a pod that names the class, or a stack that runs without one, is not this case
    assert not list(pod_runtime_handler.CHECK.run(_facts(lost)))


# ------------------------------------------------------------------ CUDA newer than the driver

def test_cuda_words_and_versions() -> None:
    hook = cuda_compat.parse_message(HOOK)
    assert hook is not None and (hook.kind, hook.needs) == ("requirement", "12.4")
    torch = cuda_compat.parse_message("RuntimeError: The NVIDIA driver on your system is too old "
                                      "(found version 12040).")
    assert torch is not None and (torch.kind, torch.driver_cuda) == ("too_old", "12.4")
    assert cuda_compat.parse_message("CUDA error: forward compatibility was attempted on non supported HW") is not None
    assert cuda_compat.parse_message("CUDA error: out of memory") is None
    assert cuda_compat.image_cuda("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime") == "12.1"
    assert cuda_compat.image_cuda("nvidia/cuda:12.4.1-runtime-ubuntu22.04") == "12.4"
    assert cuda_compat.image_cuda("registry:5000/team/train:v3-cu118") == "11.8"
    assert cuda_compat.image_cuda("nvidia/samples:vectoradd-cuda11.6.0") == "11.6"
    assert cuda_compat.image_cuda("nvidia/cuda") == ""
    new = {"metadata": {"labels": {"nvidia.com/cuda.driver-version.full": "535.104.05",
                                   "nvidia.com/cuda.runtime-version.full": "12.2"}}}
    old = {"metadata": {"labels": {"nvidia.com/cuda.driver.major": "470", "nvidia.com/cuda.driver.minor": "82",
                                   "nvidia.com/cuda.driver.rev": "01", "nvidia.com/cuda.runtime.major": "11",
                                   "nvidia.com/cuda.runtime.minor": "4"}}}
    assert cuda_compat.node_label_cuda(new) == ("535.104.05", "12.2")
    assert cuda_compat.node_label_cuda(old) == ("470.82.01", "11.4")


def test_cuda_check_from_message_and_from_image() -> None:
    node = {"metadata": {"name": "g1", "labels": {"nvidia.com/cuda.runtime.major": "11",
                                                  "nvidia.com/cuda.runtime.minor": "4",
                                                  "nvidia.com/cuda.driver.major": "470"}}}
    crashing = _pod(phase="Running", waiting={"reason": "CrashLoopBackOff"},
                    terminated={"reason": "StartError", "message": HOOK})
    [d] = list(pod_cuda_driver.CHECK.run(_facts(crashing, nodes=[node])))
    assert (d.code, d.role, d.params["container_cuda"], d.params["driver_cuda"]) == ("DRIVER_TOO_OLD", "message",
                                                                                    "12.4", "11.4")
    silent = _pod(phase="Running", image="pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",
                  waiting={"reason": "CrashLoopBackOff"}, terminated={"reason": "Error", "exitCode": 1})
    [d] = list(pod_cuda_driver.CHECK.run(_facts(silent, nodes=[node])))
    assert (d.role, d.params["container_cuda"]) == ("image", "12.1")
    fine = _pod(phase="Running", ready=True, image="pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime")
    assert not list(pod_cuda_driver.CHECK.run(_facts(fine, nodes=[node])))


# ------------------------------------------------------------------ workload creation refused

PSA = ('Error creating: pods "j-7jfr2" is forbidden: violates PodSecurity "restricted:latest": '
       'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)')


def test_create_refusals_parsed_and_left_to_their_own_readers() -> None:
    assert create_refusal.parse(PSA).level == "restricted:latest"  # type: ignore[union-attr]
    limit = 'Error creating: pods "w-" is forbidden: maximum cpu usage per Container is 16, but request is 17.'
    assert create_refusal.parse(limit).kind == "limit_range"  # type: ignore[union-attr]
    sa = ('Error creating: pods "w-" is forbidden: error looking up service account ml/runner: '
          'serviceaccount "runner" not found')
    assert create_refusal.parse(sa).kind == "service_account"  # type: ignore[union-attr]
    assert create_refusal.parse('pods "w-" is forbidden: exceeded quota: q, requested: nvidia.com/gpu=1') is None
    assert create_refusal.parse('admission webhook "v.example.com" denied the request: no') is None
    assert create_refusal.parse('pods "w-" is forbidden: pod rejected: RuntimeClass "nvidia" not found') is None


def test_create_refused_names_the_namespace_level() -> None:
    job = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"completions": 1, "parallelism": 1}, "status": {}}
    ns = {"metadata": {"name": NS, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    facts = _facts(None, owner_events=[_event(PSA, reason="FailedCreate", kind="Job", name="j")], owners=[job],
                   workload=job, namespaces=[ns], kind="Job", name="j",
                   tables={"create_refusals": [{"kind": "pod_security", "meaning": "m", "look_at": "l NAMESPACE"}]})
    [d] = list(workload_create_refused.CHECK.run(facts))
    assert (d.code, d.role) == ("WORKLOAD_CREATE_REFUSED", "pod_security")
    assert "pod-security.kubernetes.io/enforce" in d.params["rule"] and d.params["look_at"] == f"l {NS}"
    assert d.params["message"].startswith("restricted:latest: ")


# ------------------------------------------------------------------ topology spread

def _node(name: str, zone: str, gpus: int) -> Obj:
    cap = {"cpu": "32", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"capacity": cap, "allocatable": cap}}


SPREAD = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                         "labelSelector": {"matchLabels": {"app": "a"}}}]}


def test_spread_counts_domains_and_blames_the_zone_without_gpus() -> None:
    nodes = [_node("ga", "a", 4), _node("gb", "b", 4), _node("cc", "c", 0)]
    peers = [_pod("r1", node="ga", phase="Running", ready=True, labels={"app": "a"}),
             _pod("r2", node="gb", phase="Running", ready=True, labels={"app": "a"})]
    pending = _pod("p", node=None, spec=SPREAD, labels={"app": "a"})
    [result] = evaluate(pending, {n["metadata"]["name"]: n for n in nodes}, peers)
    counted = [(d.value, d.count, d.allowed) for d in result.domains]
    assert counted == [("a", 1, False), ("b", 1, False), ("c", 0, True)]
    message = ("0/3 nodes are available: 2 node(s) didn't match pod topology spread constraints, "
               "1 Insufficient nvidia.com/gpu.")
    assert parse_scheduling_message(message).reasons[0].category == "topology_spread"
    facts = _facts(pending, events=[_event(message, reason="FailedScheduling")], nodes=nodes, peers=peers)
    [d] = list(sched_topology_spread.CHECK.run(facts))
    assert (d.code, d.role, d.params["label"]) == ("SCHED_TOPOLOGY_SPREAD", "", "topology.kubernetes.io/zone")
    assert "c allowed, and no node there offers" in d.params["what"]


# ------------------------------------------------------------------ DRA claims

def test_dra_claims_and_why() -> None:
    pod = _pod("d", node=None, gpu=False, spec={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]})
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "d-gpu-x"}]
    [claim] = dra.pod_claims(pod)
    assert (claim.claim, claim.source) == ("d-gpu-x", "ResourceClaimTemplate t (claim d-gpu-x)")
    assert dra.why("0/1 nodes are available: 1 cannot allocate all claims.") == ("allocate", "")
    assert dra.why('pod "d": resourceclaim "d-gpu-x" not found')[0] == "claim_missing"
    message = "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available."
    assert parse_scheduling_message(message).reasons[0].category == "dra_claims"
    [d] = list(sched_dra_claims.CHECK.run(_facts(pod, events=[_event(message, reason="FailedScheduling")])))
    assert (d.code, d.role, d.params["name"]) == ("DRA_CLAIM_PENDING", "allocate", "d-gpu-x")
    assert not list(sched_dra_claims.CHECK.run(_facts(_pod("q", node=None), events=[_event(message)])))
