"""Dress generated pods and nodes the way a real API server serves them (``realistic=1``).

The generator's plain objects carry only what the checks read (about 0.7 KB a pod). A real
``kubectl get pod -o json`` is several kilobytes: ``managedFields`` (the field sets of every
manager, often the largest part), the container's ``env`` and ``volumeMounts``, a projected
service-account-token volume, probes, tolerations, four conditions and the container statuses.
JSON decoding dominates the cold path, so benchmarks on tiny objects understate it.

Size distribution (measured by the benchmark and printed in bench/results/LATEST.md): each pod
draws one of ``TEMPLATES`` pod templates, whose main container has 4-12 environment variables
(each also named in managedFields), a log-shipper sidecar in a quarter of them and 0-3 extra
volumes; pending pods have no container statuses. Pods land between about 4.8 and 8.2 KB of
JSON, median about 6.4 KB (seed 1). Nodes add labels, annotations, the four pressure/ready conditions, ``nodeInfo``,
``daemonEndpoints`` and an image list of 40 entries (about 10 KB a node).

Only fields no check interprets are added: the GPU resources, labels the checks read, phase,
owner, node, deletion timestamp and the conditions the generator set stay as they were. Parts
that are the same for every pod of a template (managedFields, env, probes) are shared objects,
so 100k realistic pods stay cheap to build and to hold; the simulator serializes each object once.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

Obj = dict[str, Any]

#: how many distinct pod templates the bulk is drawn from
TEMPLATES = 40
_TS = "2026-05-01T00:00:05Z"


def _hex(*parts: object, n: int = 64) -> str:
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()
    return (h * 2)[:n]


def _fields(keys: list[str]) -> Obj:
    """A managedFields ``fieldsV1`` tree: ``{"f:a": {"f:b": {}}}`` for dotted paths ``a.b``."""
    root: Obj = {}
    for key in keys:
        node = root
        for part in key.split("."):
            node = node.setdefault(part if part.startswith(("k:", ".")) else f"f:{part}", {})
    return root


def _env(rnd: random.Random, count: int) -> list[Obj]:
    env: list[Obj] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
        {
            "name": "DB_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "app-secrets", "key": "db-password", "optional": False}},
        },
    ]
    for i in range(count - len(env)):
        env.append(
            {"name": f"APP_SETTING_{i:02d}_{_hex('env', i, n=6).upper()}", "value": _hex("v", i, n=rnd.randint(4, 16))}
        )
    return env


def _container(rnd: random.Random, name: str, t: int, env_count: int, mounts: list[Obj]) -> Obj:
    port = 8000 + t
    return {
        "name": name,
        "image": f"registry.local/team/{name}:{t}.{rnd.randint(0, 30)}.{rnd.randint(0, 9)}",
        "imagePullPolicy": "IfNotPresent",
        "args": [f"--port={port}"],
        "env": _env(rnd, env_count),
        "ports": [
            {"containerPort": port, "name": "http", "protocol": "TCP"},
            {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"},
            "periodSeconds": 5,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "capabilities": {"drop": ["ALL"]},
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": mounts,
    }


def _template(rnd: random.Random, t: int) -> Obj:
    """Shared parts of one pod template: containers (without resources), volumes, managedFields."""
    extra_volumes = [
        {"name": "config", "configMap": {"name": f"app-config-{t}", "defaultMode": 420}},
        {"name": "scratch", "emptyDir": {"sizeLimit": "10Gi"}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
    ][: rnd.randint(0, 3)]
    mounts = [{"name": v["name"], "mountPath": f"/mnt/{v['name']}"} for v in extra_volumes]
    env_count = rnd.randint(4, 12)
    sidecar = None
    if rnd.random() < 0.25:
        sidecar = _container(rnd, "log-shipper", t, 2, [])
        for probe in ("livenessProbe", "readinessProbe", "securityContext", "ports"):
            del sidecar[probe]
        sidecar["resources"] = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
    spec_keys = [
        f'spec.containers.k:{{"name":"main"}}.{k}'
        for k in (
            "args",
            "env",
            "image",
            "imagePullPolicy",
            "livenessProbe.httpGet.path",
            "livenessProbe.httpGet.port",
            "ports",
            "readinessProbe.httpGet.path",
            "resources.limits",
            "resources.requests",
            "securityContext",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "volumeMounts",
        )
    ]
    spec_keys += [
        f'spec.containers.k:{{"name":"main"}}.env.k:{{"name":"{e["name"]}"}}.value' for e in _env(rnd, env_count)
    ]
    spec_keys += [
        "metadata.generateName",
        "metadata.labels.app",
        "metadata.labels.pod-template-hash",
        "metadata.ownerReferences",
        "spec.dnsPolicy",
        "spec.enableServiceLinks",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.securityContext",
        "spec.terminationGracePeriodSeconds",
    ]
    spec_keys += [f'spec.volumes.k:{{"name":"{v["name"]}"}}.name' for v in extra_volumes]
    status_keys = [
        f'status.conditions.k:{{"type":"{c}"}}.{f}'
        for c in ("ContainersReady", "Initialized", "PodScheduled", "Ready")
        for f in ("lastTransitionTime", "status")
    ]
    status_keys += [
        "status.containerStatuses",
        "status.hostIP",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.startTime",
    ]
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(spec_keys),
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(status_keys),
            "subresource": "status",
        },
    ]
    return {
        "main": _container(rnd, "main", t, env_count, mounts),
        "sidecar": sidecar,
        "volumes": extra_volumes,
        "managed": managed,
        "annotations": {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9090",
            "kubectl.kubernetes.io/restartedAt": "2026-04-28T12:00:00Z",
        },
    }


_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]
_SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _sa_volume(name: str) -> Obj:
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }


def _status(pod: Obj, containers: list[Obj], host_ip: str, i: int) -> None:
    status = pod["status"]
    if not (pod["spec"].get("nodeName")):
        status["conditions"] = [{**c, "lastProbeTime": None, "lastTransitionTime": _TS} for c in status["conditions"]]
        return
    ready = "True" if status.get("phase") == "Running" else "False"
    pod_ip = f"172.{16 + (i >> 16) % 16}.{(i >> 8) & 255}.{i & 255}"
    status.update(
        {
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t in ("Initialized", "PodScheduled") else ready,
                    "lastProbeTime": None,
                    "lastTransitionTime": _TS,
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": host_ip,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "qosClass": "Burstable",
            "startTime": _TS,
            "containerStatuses": [
                {
                    "name": c["name"],
                    "containerID": "containerd://" + _hex(pod["metadata"]["uid"], c["name"]),
                    "image": c["image"],
                    "imageID": c["image"].split(":")[0] + "@sha256:" + _hex(c["image"]),
                    "lastState": {},
                    "ready": ready == "True",
                    "restartCount": 0,
                    "started": ready == "True",
                    "state": {"running": {"startedAt": _TS}}
                    if ready == "True"
                    else {"waiting": {"reason": "ContainerCreating"}},
                }
                for c in containers
            ],
        }
    )


def dress_pod(pod: Obj, tpl: Obj, host_ips: dict[str, str], i: int) -> None:
    """Add a template's realistic fields to a generated pod, in place, keeping what it had."""
    meta, spec = pod["metadata"], pod["spec"]
    hash_ = _hex(meta["uid"], n=10)
    sa = f"kube-api-access-{hash_[:5]}"
    owners = meta.get("ownerReferences") or []
    if owners:
        meta["generateName"] = owners[0]["name"] + "-"
        for o in owners:
            o.setdefault("blockOwnerDeletion", True)
    meta["labels"] = {
        **meta.get("labels", {}),
        "pod-template-hash": hash_,
        "app.kubernetes.io/part-of": meta["namespace"],
    }
    meta["annotations"] = {
        **tpl["annotations"],
        "cni.projectcalico.org/containerID": _hex(meta["uid"], "c"),
        "cni.projectcalico.org/podIP": f"172.16.{(i >> 8) & 255}.{i & 255}/32",
    }
    meta["managedFields"] = tpl["managed"]
    sa_mount = {"name": sa, "mountPath": _SA_MOUNT, "readOnly": True}
    own = spec["containers"][0]
    main = {
        **tpl["main"],
        "name": own["name"],
        "image": own["image"],
        "resources": own["resources"],
        "volumeMounts": [*tpl["main"]["volumeMounts"], sa_mount],
    }
    containers = [main] + ([{**tpl["sidecar"], "volumeMounts": [sa_mount]}] if tpl["sidecar"] else [])
    spec.update(
        {
            "containers": containers,
            "volumes": [*tpl["volumes"], _sa_volume(sa)],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "securityContext": {"fsGroup": 1000},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": _TOLERATIONS,
        }
    )
    _status(pod, containers, host_ips.get(spec.get("nodeName") or "", ""), i)


def _images(rnd: random.Random) -> list[Obj]:
    return [
        {
            "names": [f"registry.local/team/image-{k}@sha256:{_hex('img', k)}", f"registry.local/team/image-{k}:{k}.0"],
            "sizeBytes": rnd.randint(20_000_000, 9_000_000_000),
        }
        for k in range(40)
    ]


def dress_node(node: Obj, images: list[Obj], i: int) -> None:
    """Add what kubelet and the cloud provider set on a real node, in place."""
    meta, status = node["metadata"], node["status"]
    name = meta["name"]
    meta["labels"] = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "GN10Xp.20XLARGE320" if name.startswith("gpu") else "S5.8XLARGE64",
        "topology.kubernetes.io/region": "ap-shanghai",
        "topology.kubernetes.io/zone": f"ap-shanghai-{1 + i % 5}",
        "failure-domain.beta.kubernetes.io/zone": f"20000{1 + i % 5}",
        **meta["labels"],
    }
    meta["annotations"] = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": '{"com.tencent.cloud.csi.cbs":"ins-' + _hex(name, n=8) + '"}',
    }
    meta["managedFields"] = _NODE_MANAGED
    node["spec"] = {
        **node["spec"],
        "podCIDR": f"172.{16 + i % 16}.{(i >> 8) & 255}.0/24",
        "providerID": f"qcloud:///200001/ins-{_hex(name, n=8)}",
    }
    ready = status["conditions"]
    status["conditions"] = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHas{r}",
            "message": m,
            "lastHeartbeatTime": ready[0].get("lastHeartbeatTime"),
            "lastTransitionTime": "2026-04-20T02:00:00Z",
        }
        for t, r, m in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ] + ready
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["images"] = images
    status["nodeInfo"] = {
        "architecture": "amd64",
        "bootID": _hex(name, "boot", n=36),
        "machineID": _hex(name, "machine", n=32),
        "systemUUID": _hex(name, "sys", n=36).upper(),
        "kernelVersion": "5.4.119-19.0009.28",
        "osImage": "TencentOS Server 3.1",
        "operatingSystem": "linux",
        "kubeProxyVersion": "v1.26.1",
        **status["nodeInfo"],
    }


_NODE_MANAGED = [
    {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": _TS,
        "fieldsType": "FieldsV1",
        "subresource": "status",
        "fieldsV1": _fields(
            [
                f'status.conditions.k:{{"type":"{c}"}}.{f}'
                for c in ("DiskPressure", "MemoryPressure", "PIDPressure", "Ready")
                for f in ("lastHeartbeatTime", "lastTransitionTime", "message", "reason", "status")
            ]
            + ["status.allocatable", "status.capacity", "status.images", "status.nodeInfo"]
        ),
    },
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": _TS,
        "fieldsType": "FieldsV1",
        "fieldsV1": _fields(["metadata.annotations.node.alpha.kubernetes.io/ttl", "spec.podCIDR", "spec.podCIDRs"]),
    },
]


def dress(objects: list[Obj], seed: int) -> None:
    """Make every Pod and Node in ``objects`` realistic, in place (deterministic for ``seed``)."""
    rnd = random.Random(seed * 7919 + 1)
    templates = [_template(rnd, t) for t in range(TEMPLATES)]
    images = _images(rnd)
    host_ips: dict[str, str] = {}
    n = p = 0
    for obj in objects:
        if obj["kind"] == "Node":
            host_ips[obj["metadata"]["name"]] = obj["status"]["addresses"][0]["address"]
            dress_node(obj, images, n)
            n += 1
    for obj in objects:
        if obj["kind"] == "Pod":
            dress_pod(obj, templates[rnd.randrange(TEMPLATES)], host_ips, p)
            p += 1
