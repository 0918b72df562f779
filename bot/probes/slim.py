"""Slim pod records: the few fields node-level checks need, nothing else.

Node checks (capacity, leaks, zombies, Terminating holders) look at every pod on a set of nodes;
keeping only these fields bounds memory at cluster scale, and the watch-fed cache stores the same
records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.kube.objects import meta_of
from bot.kube.resources import is_gpu_resource, pod_gpu_requests


@dataclass(frozen=True, slots=True)
class SlimPod:
    """What the checks read of a pod on a GPU node, kept instead of the whole object: a cold read of
    100,000 pods, or the watch cache that holds them all, pays for these fields only."""

    name: str
    namespace: str
    uid: str
    node: str
    phase: str
    deletion_timestamp: str | None
    owner: str = ""
    gpu: dict[str, float] = field(default_factory=dict)
    #: creationTimestamp, kept for GPU pods only (how long a holder has held its cards)
    created: str = ""
    #: the Ready condition is True; kept for GPU pods only (None for the rest): ``gpubot pending``
    #: finds the GPU pods that run but are not ready among the pods on GPU nodes it reads anyway
    ready: bool | None = None

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def live(self) -> bool:
        """Counts against node allocatable: not finished (Terminating pods still hold resources)."""
        return self.phase not in ("Succeeded", "Failed")

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def _asks_gpu(spec: dict[str, Any]) -> bool:
    """Cheap pre-check: does any container name a GPU resource at all? Most pods do not.
    (``map`` rather than a generator: asked of every pod on every GPU node a question reads.)"""
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") or {}
            for section in ("limits", "requests"):
                if any(map(is_gpu_resource, resources.get(section) or ())):
                    return True
    return False


def _ready(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


#: one shared empty GPU map: most pods ask for no GPU (100,000 empty dicts are 6 MB in the watch
#: cache), and no reader writes into a record's map
NO_GPU: dict[str, float] = {}


def slim(pod: dict[str, Any], intern: Callable[[str], str] | None = None) -> SlimPod:
    """The pod's slim record. ``intern``: applied to the strings many records repeat (namespace,
    node, phase, owner); the watch cache passes ``sys.intern``, so its 100,000 records share them,
    without making each record twice."""
    meta = meta_of(pod)
    spec = pod.get("spec") or {}
    owner = ""
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            owner = f"{ref.get('kind')}/{ref.get('name')}"
            break
    asks = _asks_gpu(spec)
    namespace = str(meta.get("namespace", ""))
    node = str(spec.get("nodeName") or "")
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    if intern is not None:
        namespace, node, phase, owner = intern(namespace), intern(node), intern(phase), intern(owner)
    return SlimPod(
        name=str(meta.get("name", "")),
        namespace=namespace,
        uid=str(meta.get("uid", "")),
        node=node,
        phase=phase,
        deletion_timestamp=meta.get("deletionTimestamp"),
        owner=owner,
        gpu=(pod_gpu_requests(pod) if asks else None) or NO_GPU,
        created=str(meta.get("creationTimestamp") or "") if asks else "",
        ready=_ready(pod.get("status") or {}) if asks else None,
    )
