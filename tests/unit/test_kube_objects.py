"""The metadata accessors: what an absent or null field reads as, and that they hand back the
object's own dicts (a caller filtering labels sees the API's values, not a copy's)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.objects import (
    annotations_of,
    controller_of,
    created_of,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    owner_refs_of,
    uid_of,
)

POD: dict[str, Any] = {
    "metadata": {
        "name": "train-0", "namespace": "ai", "uid": "u1", "labels": {"app": "train"},
        "annotations": {"a": "b"}, "creationTimestamp": "2026-05-07T11:00:00Z",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": "o1"},
                            {"kind": "Job", "name": "j", "uid": "o2", "controller": True}],
    }
}


def test_fields_read_as_the_api_wrote_them() -> None:
    assert (name_of(POD), namespace_of(POD), uid_of(POD), created_of(POD)) == (
        "train-0", "ai", "u1", "2026-05-07T11:00:00Z")
    assert labels_of(POD) is POD["metadata"]["labels"]
    assert annotations_of(POD) == {"a": "b"}
    assert [r["uid"] for r in owner_refs_of(POD)] == ["o1", "o2"]
    assert controller_of(POD) == {"kind": "Job", "name": "j", "uid": "o2", "controller": True}
    assert not is_deleting(POD)
    assert is_deleting({"metadata": {"deletionTimestamp": "2026-05-07T11:00:00Z"}})


@pytest.mark.parametrize("obj", [None, {}, {"metadata": None}, {"metadata": {"name": None, "labels": None,
                                                                             "ownerReferences": None}}])
def test_absent_or_null_reads_as_empty(obj: dict[str, Any] | None) -> None:
    assert meta_of(obj) == ({} if not obj or not obj.get("metadata") else obj["metadata"])
    assert (name_of(obj), namespace_of(obj), uid_of(obj), created_of(obj)) == ("", "", "", "")
    assert labels_of(obj) == {} and annotations_of(obj) == {} and owner_refs_of(obj) == []
    assert controller_of(obj) is None and not is_deleting(obj)
