"""Discovery documents (/api, /apis, /api/v1, /apis/GROUP/VERSION, /version).

kubectl resolves ``po``, ``no``, ``ds`` and ``rollout restart`` targets through these, so the
served resource types, their verbs, kinds and short names must be listed exactly as the real
API lists them. Built once per server from the store's resource table; never reads objects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.sim.store import RESOURCE_TYPES, ResourceType

_SUB_KINDS = {"exec": "PodExecOptions", "log": "Pod", "status": "", "scale": "Scale"}
_SUB_VERBS = {"exec": ["create", "get"], "log": ["get"], "status": ["get", "patch", "update"]}


def groups(types: Sequence[ResourceType] = RESOURCE_TYPES) -> dict[str, list[ResourceType]]:
    """group/version -> resource types ("v1" for the core group)."""
    out: dict[str, list[ResourceType]] = {}
    for rt in types:
        out.setdefault(rt.api_version, []).append(rt)
    return out


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group(name: str, types: Sequence[ResourceType] = RESOURCE_TYPES) -> dict[str, Any] | None:
    versions = sorted({rt.version for rt in types if rt.group == name and name}, key=_version_rank)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _version_rank(version: str) -> tuple[int, int, int]:
    """Kubernetes version priority: GA before beta before alpha, higher numbers first."""
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (9, 0, 0)
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0))


def api_group_list(types: Sequence[ResourceType] = RESOURCE_TYPES) -> dict[str, Any]:
    names = sorted({rt.group for rt in types if rt.group})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(n, types) for n in names]}


def resource_list(group_version: str, all_types: Sequence[ResourceType] = RESOURCE_TYPES) -> dict[str, Any] | None:
    types = groups(all_types).get(group_version)
    if types is None:
        return None
    resources: list[dict[str, Any]] = []
    for rt in types:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.kind in ("Pod", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet", "Job"):
            entry["categories"] = ["all"]
        resources.append(entry)
        for sub in rt.subresources:
            resources.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": _SUB_KINDS.get(sub) or rt.kind,
                    "verbs": _SUB_VERBS.get(sub, ["get", "patch", "update"]),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def version_info(git_version: str) -> dict[str, str]:
    """``/version``: major/minor parsed from e.g. ``v1.20.6-tke.34`` -> "1", "20"."""
    m = re.match(r"^v?(\d+)\.(\d+)", git_version)
    major, minor = (m.group(1), m.group(2)) if m else ("1", "0")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.22.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
