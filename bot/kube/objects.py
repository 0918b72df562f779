"""Typed views of the object metadata gpubot reads: one accessor per field instead of
``(obj.get("metadata") or {}).get(...)`` spelled out in every module.

Objects stay the plain dicts the API returns (nothing is copied or converted, so a probe's dict
and a simulator's dict read the same). The accessors only say, once, what an absent or null
field means: an absent ``metadata``, ``labels`` or ``ownerReferences`` is empty, an absent name
is ``""``. ``ObjectMeta`` names the metadata fields gpubot reads, so mypy catches a misspelt key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

#: an API object as the client returns it (``sanitize_for_serialization``) or the simulator serves it
Obj = dict[str, Any]


class OwnerRef(TypedDict, total=False):
    """One ``metadata.ownerReferences`` entry."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool


#: the ``metadata`` fields gpubot reads (``continue`` is a keyword, hence the functional form)
ObjectMeta = TypedDict(
    "ObjectMeta",
    {
        "name": str,
        "generateName": str,
        "namespace": str,
        "uid": str,
        "labels": dict[str, str],
        "annotations": dict[str, str],
        "ownerReferences": list[OwnerRef],
        "creationTimestamp": str,
        "deletionTimestamp": str,
        "resourceVersion": str,
        "generation": int,
        "finalizers": list[str],
        "continue": str,
    },
    total=False,
)


def meta_of(obj: Mapping[str, Any] | None) -> ObjectMeta:
    """The object's ``metadata``, empty when it (or the object) is absent or null."""
    return cast(ObjectMeta, (obj or {}).get("metadata") or {})


def name_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.name``, ``""`` when absent."""
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.namespace``, ``""`` for a cluster-scoped object (or one that omits it)."""
    return str(meta_of(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.uid``, ``""`` when absent."""
    return str(meta_of(obj).get("uid") or "")


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.labels`` (the object's own dict, not a copy), empty when absent."""
    return meta_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.annotations`` (the object's own dict, not a copy), empty when absent."""
    return meta_of(obj).get("annotations") or {}


def owner_refs_of(obj: Mapping[str, Any] | None) -> list[OwnerRef]:
    """``metadata.ownerReferences``, empty when absent."""
    return meta_of(obj).get("ownerReferences") or []


def controller_of(obj: Mapping[str, Any] | None) -> OwnerRef | None:
    """The owner reference marked ``controller: true``, if any (at most one by API rule)."""
    return next((ref for ref in owner_refs_of(obj) if ref.get("controller")), None)


def created_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.creationTimestamp`` as the API wrote it (RFC 3339), ``""`` when absent."""
    return str(meta_of(obj).get("creationTimestamp") or "")


def is_deleting(obj: Mapping[str, Any] | None) -> bool:
    """True once the object has a ``deletionTimestamp``: it is going away, whatever its status says."""
    return bool(meta_of(obj).get("deletionTimestamp"))
