"""A listed pod's few fields the slim records read, from a lazily parsed page (``simdjson``).

Why: realistic pods are 5-8 kB of JSON (managedFields, env, probes, statuses) of which a slim
record keeps a few fields; decoding every object of a page whole cost several times what these
fields do. The watch cache's relists (``bot.probes.cache``) and the reader's walk over every pod
(``bot.probes.kube`` ``slim_pods``) read pages this way where ``simdjson`` is installed; without it
they decode whole pages with orjson, and ``skeleton`` is never called. Nothing here imports gpubot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: a plain JSON object (``bot.kube.objects.Obj``; not imported: the benchmark's floor loads this
#: file alone, as it loads ``bot.probes.node_images``, so that it reads pods the way gpubot does)
Obj = dict[str, Any]

simdjson: Any
try:  # optional: a dependency, but the readers work without it
    import simdjson
except ImportError:  # pragma: no cover - orjson decodes whole pages instead
    simdjson = None

#: the lazily parsed container types (``simdjson``), or nothing to match without it
_LAZY_OBJECT: Any = simdjson.Object if simdjson is not None else None
_LAZY_ARRAY: Any = simdjson.Array if simdjson is not None else None


def plain(value: Any) -> Any:
    """A lazily parsed value (``simdjson``) as plain dicts, lists and scalars. (The exact type is
    asked, once: called some ten times a pod, 100,000 pods a relist.)"""
    kind = type(value)
    if kind is _LAZY_OBJECT:
        return value.as_dict()
    if kind is _LAZY_ARRAY:
        return value.as_list()
    return value


#: the metadata and spec fields of a pod ``slim`` reads (``labels``: where ``component_owner`` does)
_POD_META = frozenset({"name", "namespace", "uid", "deletionTimestamp", "creationTimestamp", "ownerReferences",
                       "labels"})
_POD_SPEC = frozenset({"nodeName", "containers", "initContainers"})


def _fields(obj: Any, wanted: frozenset[str]) -> Obj:
    """The ``wanted`` keys a lazily parsed object has (null ones left out), their values still lazy.

    Its keys are walked once rather than each asked for: pysimdjson's ``get`` of a key that is not
    there costs ~2 us, ten times one that is, and most pods lack one of these (a
    ``deletionTimestamp``, ``initContainers``). Measured on a page of 2,000 realistic pods: the
    metadata 3.4 -> 2.2 us a pod, the spec 3.0 -> 1.9 us. (A container, whose ``resources`` are
    nearly always there among a dozen keys, is asked directly.)"""
    if type(obj) is not _LAZY_OBJECT:
        return {}
    return {k: v for k in obj.keys() if k in wanted and (v := obj[k]) is not None}  # noqa: SIM118 - a lazy object


def _daemonset_owned(refs: Any) -> bool:
    """A controller reference names a DaemonSet: ``component_owner`` reads this pod's labels."""
    return isinstance(refs, list) and any(
        isinstance(r, dict) and r.get("controller") and r.get("kind") == "DaemonSet" for r in refs
    )


def _ready_only(conditions: Any) -> list[Obj]:
    """The Ready conditions as plain data: ``slim`` reads no other."""
    if type(conditions) is not _LAZY_ARRAY:
        return []
    return [
        {"type": "Ready", "status": plain(c.get("status"))}
        for c in conditions
        if type(c) is _LAZY_OBJECT and c.get("type") == "Ready"
    ]


def skeleton(pod: Any) -> Obj:
    """The part of a lazily parsed pod that ``slim`` and ``component_owner`` read, as plain data:
    realistic pods are 5-8 kB of JSON (managedFields, env, probes, statuses) of which these few
    fields are kept, and building every object of a page cost 10x the page's transfer. Of the
    conditions only Ready is built, and the labels only of a pod a DaemonSet controls."""
    meta = _fields(pod.get("metadata"), _POD_META)
    labels = meta.pop("labels", None)
    kept = {k: plain(v) for k, v in meta.items()}
    if labels is not None and _daemonset_owned(kept.get("ownerReferences")):
        kept["labels"] = plain(labels)
    status = pod.get("status") or {}
    state: Obj = {} if (phase := status.get("phase")) is None else {"phase": plain(phase)}
    if (conditions := status.get("conditions")) is not None:
        state["conditions"] = _ready_only(conditions)
    spec = _fields(pod.get("spec"), _POD_SPEC)
    return {
        "metadata": kept,
        "status": state,
        "spec": {
            "nodeName": plain(spec.get("nodeName")),
            "containers": [{"resources": plain(c.get("resources") or {})} for c in spec.get("containers") or ()],
            "initContainers": [
                {"resources": plain(c.get("resources") or {}), "restartPolicy": plain(c.get("restartPolicy"))}
                for c in spec.get("initContainers") or ()
            ],
        },
    }


def kept_items(data: bytes, keep: Callable[[Any], Any]) -> tuple[list[Any], str] | None:
    """A list page parsed lazily: ``keep(item)`` of each item (``keep`` must build what it keeps,
    with ``skeleton`` or ``plain``: the lazy values die with the page) and the continue token.
    None where ``simdjson`` is missing or the page is not a JSON object: the caller then decodes it
    whole, and says what is wrong with it."""
    if simdjson is None:
        return None
    try:
        body = simdjson.Parser().parse(data)
    except (ValueError, RuntimeError):
        return None
    if type(body) is not _LAZY_OBJECT:
        return None
    items = body.get("items")
    kept = [keep(item) for item in items] if type(items) is _LAZY_ARRAY else []
    meta = body.get("metadata")
    token = meta.get("continue") if type(meta) is _LAZY_OBJECT else None
    return kept, str(token or "")


def node_of(pod: Any) -> str:
    """The node a pod (plain or lazily parsed) is bound to; "" for none."""
    spec = pod.get("spec") or {}
    return str(spec.get("nodeName") or "")
