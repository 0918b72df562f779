"""Large generated scenarios for benchmarks and scale tests: thousands of nodes, 100k pods.

``generate_scenario`` builds the same dict a scenario YAML file holds, so generated clusters go
through ``scenario_from_dict`` like hand-written ones. The mix is what a real GPU cluster shows:
qGPU (``tke.cloud.tencent.com/qgpu-*``) and ``nvidia.com/gpu`` nodes with their SSH facts,
CPU nodes, running / pending / Terminating pods, FailedScheduling events for the pending ones,
a few kubelet checkpoints holding zombie pod UIDs, a few nodes whose GPUs are held by
Terminating pods while the cards sit idle (leaks), and one well-known pending target
(namespace ``bench``, pod ``target-pending-0``) that asks for a whole 8-GPU node nobody has free.

It must stay fast (100k pods in a few seconds: plain dict literals, no deep copies, no YAML) and
deterministic for a seed (one ``random.Random(seed)``, no clock, no uuid4). It must never talk to
anything: it only builds data.
"""

from __future__ import annotations

import gc
import hashlib
import json
import random
from typing import Any

from bot.synth.generate_realistic import dress

Obj = dict[str, Any]

TARGET_NAMESPACE = "bench"
TARGET_POD = "target-pending-0"
NVIDIA = "nvidia.com/gpu"
QGPU_CORE = "tke.cloud.tencent.com/qgpu-core"
QGPU_MEMORY = "tke.cloud.tencent.com/qgpu-memory"
_TS = "2026-05-07T10:00:00Z"
_SPEC_KEYS = {"nodes", "gpu_nodes", "pods", "seed", "silent_nodes", "latency_ms", "realistic", "pending_gpu"}


def parse_spec(text: str) -> dict[str, int]:
    """``"nodes=200,gpu_nodes=40,pods=5000,seed=1"`` -> keyword arguments of generate_scenario
    (``realistic=1``: pods and nodes shaped like real API output, see ``generate_realistic``)."""
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _SPEC_KEYS:
            raise ValueError(f"bad generator spec item {part!r}; use {','.join(sorted(_SPEC_KEYS))}")
        try:
            out[key] = int(value.replace("_", "").replace("k", "000"))
        except ValueError:
            raise ValueError(f"generator spec {key}: {value!r} is not a whole number") from None
    for required in ("nodes", "gpu_nodes", "pods"):
        if required not in out:
            raise ValueError(f"generator spec needs {required}=N")
    return out


def _uid(*parts: object) -> str:
    """A stable UUID-shaped id (md5 of the parts: uuid5 is three times slower at 100k pods)."""
    h = hashlib.md5("/".join(str(p) for p in parts).encode(), usedforsecurity=False).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _node(name: str, ip: str, labels: dict[str, str], gpu: dict[str, str]) -> Obj:
    capacity = {"cpu": "96", "memory": "394931500Ki", "pods": "110", **gpu}
    allocatable = {"cpu": "95", "memory": "384031500Ki", "pods": "110", **gpu}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid("node", name),
            "creationTimestamp": "2026-03-02T08:11:40Z",
            "labels": {"kubernetes.io/hostname": ip, "kubernetes.io/os": "linux", **labels},
        },
        "spec": {},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": _TS,
                    "lastTransitionTime": "2026-04-20T02:00:00Z",
                }
            ],
            "nodeInfo": {"kubeletVersion": "v1.26.1", "containerRuntimeVersion": "containerd://1.6.9"},
        },
    }


def _pod(
    name: str,
    ns: str,
    node: str,
    phase: str,
    gpu: dict[str, str],
    *,
    owner: str = "",
    deleting: bool = False,
    app: str = "",
) -> Obj:
    requests = {"cpu": "2", "memory": "8Gi", **gpu}
    meta: Obj = {
        "name": name,
        "namespace": ns,
        "uid": _uid("pod", ns, name),
        "creationTimestamp": "2026-05-01T00:00:00Z",
        "labels": {"app": app or name.rsplit("-", 2)[0]},
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": _uid("rs", ns, owner),
                "controller": True,
            }
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-05-07T09:00:00Z"
        meta["deletionGracePeriodSeconds"] = 30
    spec: Obj = {
        "containers": [
            {
                "name": "main",
                "image": "registry.local/train:1.0",
                "resources": {"requests": requests, "limits": dict(requests)},
            }
        ],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
    }
    status: Obj = {"phase": phase}
    if node:
        spec["nodeName"] = node
        status["conditions"] = [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]
    else:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "see events"}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _pending_gpu_pods(objects: list[Obj], count: int, teams: list[str], nodes: int, n_qgpu: int,
                      nvidia_msg: str) -> int:
    """``count`` pending GPU pods, five per ReplicaSet, the sets dealt over ``teams`` in turn: two
    of three ask for a whole 8-GPU node (the nvidia nodes are full), one for more qGPU than is free."""
    qgpu_msg = (f"0/{nodes} nodes are available: {n_qgpu} Insufficient {QGPU_CORE}, "
                f"{nodes - n_qgpu} node(s) didn't match Pod's node affinity/selector.")
    for k in range(count):
        group = k // 5
        team, rs = teams[group % len(teams)], f"train-{group:05d}"
        qgpu = group % 3 == 2
        ask = {QGPU_CORE: "300", QGPU_MEMORY: "40"} if qgpu else {NVIDIA: "8"}
        p = _pod(f"{rs}-g{k % 5}", team, "", "Pending", ask, owner=rs, app="train")
        objects.append(p)
        objects.append(_event(p, qgpu_msg if qgpu else nvidia_msg, 1_000_000 + k))
    return count


def _event(pod: Obj, message: str, index: int) -> Obj:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{index:08x}", "namespace": meta["namespace"]},
        "involvedObject": {
            "kind": "Pod",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "reason": "FailedScheduling",
        "message": message,
        "type": "Warning",
        "count": 3,
        "firstTimestamp": "2026-05-07T09:50:00Z",
        "lastTimestamp": _TS,
        "source": {"component": "default-scheduler"},
    }


def _namespace(name: str, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _checkpoint(entries: list[tuple[str, str, list[str]]], registered: dict[str, list[str]]) -> str:
    data = {
        "Data": {
            "PodDeviceEntries": [
                {
                    "PodUID": uid,
                    "ContainerName": "main",
                    "ResourceName": res,
                    "DeviceIDs": {"0": ids},
                    "AllocResp": "",
                }
                for uid, res, ids in entries
            ]
            or None,
            "RegisteredDevices": registered,
        },
        "Checksum": 1,
    }
    return json.dumps(data, separators=(",", ":"))


def _gpus(node_index: int, count: int, product: str, busy: bool) -> list[Obj]:
    return [
        {
            "index": i,
            "uuid": f"GPU-{node_index:08x}-0000-4000-8000-{i:012x}",
            "name": product,
            "utilization_gpu": 87 if busy else 0,
            "memory_used_mib": 20480 if busy else 0,
            "memory_total_mib": 32768,
            "temperature_c": 71 if busy else 33,
            "power_w": 240.0 if busy else 30.5,
        }
        for i in range(count)
    ]


def generate_scenario(
    *,
    nodes: int,
    gpu_nodes: int,
    pods: int,
    seed: int = 1,
    silent_nodes: int = 0,
    latency_ms: int = 0,
    zombies: int = 2,
    leaks: int = 2,
    pending_share: float = 0.02,
    terminating_share: float = 0.005,
    realistic: int = 0,
    pending_gpu: int = 0,
) -> dict[str, Any]:
    """A scenario dict: ``nodes`` nodes of which ``gpu_nodes`` carry GPUs (half qGPU, half
    ``nvidia.com/gpu`` with 8 cards), ``pods`` pods in all (the target included).

    Every nvidia node is kept full (its 8 cards allocated) so the target stays Pending for a
    capacity reason; ``silent_nodes`` GPU nodes accept SSH and never answer (``ssh: timeout``);
    ``latency_ms`` delays every node command, over SSH, the agent or the actuator (a per-node round
    trip for the node-status benchmark).
    ``realistic`` dresses pods and nodes as a real API server serves them (3-8 KB a pod instead of
    0.7 KB; slower to build, so tests leave it off and benchmarks turn it on).
    ``pending_gpu`` more pending GPU pods (of the ``pods``), five per ReplicaSet over the team
    namespaces, with their FailedScheduling events (``gpubot pending`` at scale).
    """
    if not 0 < gpu_nodes <= nodes or pods < 1:
        raise ValueError("need 0 < gpu_nodes <= nodes and pods >= 1")
    # Hundreds of thousands of small dicts, none cyclic: the cyclic GC would only rescan them.
    enabled = gc.isenabled()
    gc.disable()
    try:
        data = _generate(
            nodes,
            gpu_nodes,
            pods,
            seed,
            silent_nodes,
            latency_ms,
            zombies,
            leaks,
            pending_share,
            terminating_share,
            pending_gpu,
        )
        if realistic:
            dress(data["kubernetes"]["objects"], seed)
        return data
    finally:
        if enabled:
            gc.enable()


def _generate(
    nodes: int,
    gpu_nodes: int,
    pods: int,
    seed: int,
    silent_nodes: int,
    latency_ms: int,
    zombies: int,
    leaks: int,
    pending_share: float,
    terminating_share: float,
    pending_gpu: int = 0,
) -> dict[str, Any]:
    rnd = random.Random(seed)
    objects: list[Obj] = [
        _namespace(TARGET_NAMESPACE, {"tke.cloud.tencent.com/qgpu-schedule-policy": "fixed-share"}),
        _namespace("kube-system", {}),
        _namespace("qgpu", {}),
    ]
    teams = [f"team-{i:02d}" for i in range(20)]
    objects += [_namespace(t, {"tke.cloud.tencent.com/qgpu-schedule-policy": "best-effort"}) for t in teams]
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "qgpu-manager", "namespace": "qgpu", "labels": {"app": "qgpu-manager"}},
            "spec": {
                "selector": {"matchLabels": {"app": "qgpu-manager"}},
                "template": {"metadata": {"labels": {"app": "qgpu-manager"}}, "spec": {"containers": []}},
            },
            "status": {"desiredNumberScheduled": 0, "numberReady": 0},
        }
    )
    node_facts: dict[str, Obj] = {}
    gpu_names: list[str] = []
    nvidia_names: list[str] = []
    qgpu_names: list[str] = []
    for i in range(nodes):
        ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        if i < gpu_nodes:
            name = f"gpu-{i:05d}"
            gpu_names.append(name)
            if i % 2 == 0:
                qgpu_names.append(name)
                gpu = {QGPU_CORE: "400", QGPU_MEMORY: "124"}
                labels = {"qgpu-device-enable": "enable", "nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB"}
            else:
                nvidia_names.append(name)
                gpu = {NVIDIA: "8"}
                labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
            objects.append(_node(name, ip, labels, gpu))
            node_facts[name] = {
                "address": ip,
                "ssh": "ok",
                "kubelet": "active",
                "driver": "535.216.03",
                "cuda": "12.2",
                "latency_ms": latency_ms,
                "gpus": _gpus(
                    i,
                    4 if i % 2 == 0 else 8,
                    "Tesla V100-SXM2-32GB" if i % 2 == 0 else "NVIDIA A100-SXM4-40GB",
                    True,
                ),
                "checkpoint": _checkpoint([], {}),
            }
        else:
            objects.append(_node(f"cpu-{i:05d}", ip, {}, {}))
    cpu_names = [f"cpu-{i:05d}" for i in range(gpu_nodes, nodes)] or gpu_names

    made = 0
    # qgpu-manager on every qGPU node
    for n in qgpu_names:
        if made >= pods - 1:
            break
        p = _pod(f"qgpu-manager-{n}", "qgpu", n, "Running", {}, app="qgpu-manager")
        p["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "qgpu-manager",
                "uid": _uid("ds", "qgpu-manager"),
                "controller": True,
            }
        ]
        objects.append(p)
        made += 1
    # fill every nvidia node (8 cards: one 8-GPU pod, or two 4-GPU pods) and half of each qGPU node
    leak_nodes = set(nvidia_names[:leaks])
    zombie_nodes = set(nvidia_names[leaks : leaks + zombies]) | set(qgpu_names[:zombies])
    for idx, n in enumerate(nvidia_names):
        team = teams[idx % len(teams)]
        shapes = ["8"] if idx % 3 == 0 else ["4", "4"]
        for j, g in enumerate(shapes):
            if made >= pods - 1:
                break
            deleting = n in leak_nodes
            rs = f"train-{idx:05d}-{j}"
            objects.append(
                _pod(f"{rs}-x{j}", team, n, "Running", {NVIDIA: g}, owner=rs, deleting=deleting, app="train")
            )
            made += 1
        if n in leak_nodes:  # Terminating holders, cards idle: the leak triage case
            node_facts[n]["gpus"] = _gpus(gpu_names.index(n), 8, "NVIDIA A100-SXM4-40GB", False)
    for idx, n in enumerate(qgpu_names):
        if made >= pods - 1:
            break
        team = teams[idx % len(teams)]
        rs = f"infer-{idx:05d}"
        objects.append(
            _pod(f"{rs}-q0", team, n, "Running", {QGPU_CORE: "50", QGPU_MEMORY: "16"}, owner=rs, app="infer")
        )
        made += 1
    for n in sorted(zombie_nodes):
        dead = [_uid("zombie", n, k) for k in range(2)]
        res = QGPU_CORE if n in qgpu_names else NVIDIA
        ids = [f"{res.rsplit('/', 1)[1]}-{k}" for k in range(4)]
        node_facts[n]["checkpoint"] = _checkpoint([(u, res, ids[:2]) for u in dead], {res: ids})
        node_facts[n]["gpus"] = _gpus(gpu_names.index(n), 4 if n in qgpu_names else 8, "Tesla V100-SXM2-32GB", False)
    for n in gpu_names[::-1][:silent_nodes]:
        node_facts[n]["ssh"] = "timeout"

    # the target: an 8-GPU pod in "bench" that no full nvidia node can take
    target = _pod(TARGET_POD, TARGET_NAMESPACE, "", "Pending", {NVIDIA: "8"}, app="target")
    objects.append(target)
    made += 1
    n_gpu = len(nvidia_names)
    sched_msg = (
        f"0/{nodes} nodes are available: {n_gpu} Insufficient {NVIDIA}, "
        f"{nodes - n_gpu} node(s) didn't match Pod's node affinity/selector. preemption: 0/{nodes} nodes "
        f"are available: {nodes} No preemption victims found for incoming pod."
    )
    objects.append(_event(target, sched_msg, 0))
    made += _pending_gpu_pods(objects, pending_gpu, teams, nodes, len(qgpu_names), sched_msg)

    # the bulk: CPU pods on CPU nodes, some pending (with events), some Terminating
    remaining = pods - made
    ev = 1
    for k in range(remaining):
        team = teams[rnd.randrange(len(teams))]
        rs = f"web-{k // 5:06d}"
        r = rnd.random()
        if r < pending_share:
            p = _pod(f"{rs}-p{k % 5}", team, "", "Pending", {}, owner=rs, app="web")
            objects.append(p)
            objects.append(_event(p, f"0/{nodes} nodes are available: {nodes} Insufficient cpu.", ev))
            ev += 1
            continue
        node = cpu_names[rnd.randrange(len(cpu_names))]
        deleting = r < pending_share + terminating_share
        objects.append(_pod(f"{rs}-r{k % 5}", team, node, "Running", {}, owner=rs, deleting=deleting, app="web"))

    return {
        "scenario": f"generated-n{nodes}-g{gpu_nodes}-p{pods}-s{seed}",
        "summary": f"generated: {nodes} nodes ({gpu_nodes} GPU), {pods} pods, seed {seed}",
        "kubernetes": {"version": "v1.26.1", "objects": objects},
        "nodes": node_facts,
    }
