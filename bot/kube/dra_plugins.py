"""A DRA driver's kubelet plugin: which DaemonSet runs it, and whether it is up on a given node.

Why: a DRA driver publishes a node's devices (ResourceSlices) and prepares them for a pod only
from its kubelet-plugin pod on that node. When that pod is missing or not ready, a claim that
needs the node is never prepared (the kubelet says "DRA driver gpu.nvidia.com is not registered")
or the node's devices are never published. NVIDIA's driver runs it as the DaemonSet
``<release>-kubelet-plugin`` (chart nvidia-dra-driver-gpu, namespace nvidia-dra-driver-gpu);
other drivers name theirs ``...-kubeletplugin`` or ``...-kubelet-plugin`` too. A DaemonSet is taken
for a driver's when its name says kubelet plugin and names the driver's vendor (``nvidia`` for
``gpu.nvidia.com``, ``example`` for ``gpu.example.com``). Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from bot.kube.objects import meta_of, name_of
from bot.kube.pod_status import classify

Obj = Mapping[str, Any]
_PLUGIN = re.compile(r"kubelet-?plugin", re.I)
_NOT_REGISTERED = re.compile(r"DRA driver (?P<driver>[\w.-]+) is not registered", re.I)


def is_plugin_daemonset(ds: Obj) -> bool:
    """A DaemonSet that runs some DRA driver's kubelet plugin (by name or its component label)."""
    meta = meta_of(ds)
    text = " ".join([str(meta.get("name") or ""), *map(str, (meta.get("labels") or {}).values())])
    return bool(_PLUGIN.search(text))


def vendor(driver: str) -> str:
    """The vendor label of a driver name: ``nvidia`` for ``gpu.nvidia.com``."""
    parts = driver.split(".")
    return parts[-2].lower() if len(parts) >= 2 else driver.lower()


def for_driver(daemonsets: Iterable[Obj], driver: str) -> list[Obj]:
    """The kubelet-plugin DaemonSets that name ``driver``'s vendor."""
    want = vendor(driver)
    out = []
    for ds in daemonsets:
        meta = meta_of(ds)
        text = " ".join([str(meta.get("name") or ""), *map(str, (meta.get("labels") or {}).values())]).lower()
        if want and want in re.split(r"[^a-z0-9]+", text):
            out.append(ds)
    return out


def state_on(pods: Iterable[Obj], node: str) -> tuple[str, str]:
    """("ready" | "missing" | "not ready (<status>)", detail) of the plugin pod on ``node``."""
    here = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]
    if not here:
        return "missing", "no pod of the DaemonSet on the node"
    detail, shown = [], ""
    for pod in here:
        st = classify(pod)
        if st.display_status == "Running" and st.ready:
            return "ready", name_of(pod)
        shown = shown or st.display_status
        detail.append(f"{(pod.get('metadata') or {}).get('name')}: {st.display_status}"
                      + (f" ({st.detail})" if st.detail else ""))
    return f"not ready ({shown})", "; ".join(detail)


def unregistered_driver(message: str) -> str:
    """The driver a kubelet says is not registered ("" when the text does not say so)."""
    m = _NOT_REGISTERED.search(message or "")
    return m["driver"] if m else ""


def allocated_nodes(claim: Obj) -> set[str]:
    """The nodes an allocated claim is bound to (its allocation's node selector on metadata.name)."""
    alloc = (claim.get("status") or {}).get("allocation") or {}
    out: set[str] = set()
    for term in (alloc.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                out.update(str(v) for v in field.get("values") or [])
    return out


def allocated_drivers(claim: Obj) -> set[str]:
    results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or []
    return {str(r.get("driver")) for r in results if r.get("driver")}


__all__ = ["allocated_drivers", "allocated_nodes", "for_driver", "is_plugin_daemonset", "state_on",
           "unregistered_driver", "vendor"]
