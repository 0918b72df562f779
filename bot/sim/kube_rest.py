"""The REST verbs on served objects: get, list, create, replace, patch, delete.

Each answers like the real API: lists carry ``kind: XList`` and paging metadata, writes bump
``resourceVersion`` (and ``generation`` on a workload spec change), a stale resourceVersion is a
409, and deletion is graceful when the object has finalizers. Kept apart from routing so both
stay small; this module never records writes or applies faults (``kube_api`` does).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.kube.selectors import SelectorError, matcher, parse_field_selector, parse_label_selector
from bot.sim.kube_status import not_found, status_response, success
from bot.sim.kube_table import table, wants_table
from bot.sim.patch import PatchError, apply_patch
from bot.sim.store import GENERATION_KINDS, Key, ObjectStore, ResourceType, dumps


@dataclass(frozen=True)
class Target:
    """A parsed resource URL: ``/api/v1/namespaces/ai/pods/x/exec`` -> pods, ai, x, exec."""

    rtype: ResourceType
    namespace: str | None
    name: str | None = None
    sub: str | None = None


class RestError(Exception):
    """An error answer; ``response`` is the Status to send."""

    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=dumps(obj), content_type="application/json")


def bad_request(message: str) -> RestError:
    return RestError(status_response(400, message))


# -- list ---------------------------------------------------------------------------------------
def encode_continue(rv: int, key: Key) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> Key:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        start = json.loads(raw)["start"]
        ns, name = str(start).split("/", 1)
        return (ns, name)
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion") from None


def selectors(request: web.Request, rtype: ResourceType) -> tuple[Any, dict[str, str]]:
    """(match predicate or None, equality field requirements usable as index hints)."""
    try:
        labels = parse_label_selector(request.query.get("labelSelector"))
        fields = parse_field_selector(request.query.get("fieldSelector"), rtype.kind)
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    hints = {f.field: f.value for f in fields if not f.negate}
    return matcher(labels, fields), hints


def list_objects(request: web.Request, store: ObjectStore, target: Target) -> web.Response:
    rtype = target.rtype
    match, hints = selectors(request, rtype)
    limit_text = request.query.get("limit")
    try:
        limit = int(limit_text) if limit_text else None
    except ValueError:
        raise bad_request(f"invalid limit {limit_text!r}") from None
    if limit is not None and limit <= 0:
        limit = None
    token = request.query.get("continue")
    after = decode_continue(token) if token else None
    namespace = target.namespace
    if namespace is None and rtype.namespaced and "metadata.namespace" in hints:
        namespace = hints["metadata.namespace"]
    page = store.page(
        rtype,
        namespace=namespace,
        match=match,
        node_name=hints.get("spec.nodeName"),
        name=hints.get("metadata.name") if namespace is not None or not rtype.namespaced else None,
        limit=limit,
        after=after,
    )
    rv = store.resource_version
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if page.last_key is not None:
        meta["continue"] = encode_continue(rv, page.last_key)
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
    if wants_table(request.headers.get("Accept", "")):
        return web.Response(body=table(rtype, page.entries, meta, store.clock()), content_type="application/json")
    head = {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta}
    body = dumps(head)[:-1] + b',"items":[' + b",".join(e.raw for e in page.entries) + b"]}"
    return web.Response(body=body, content_type="application/json")


# -- single objects -----------------------------------------------------------------------------
def existing(store: ObjectStore, target: Target) -> dict[str, Any]:
    assert target.name is not None
    entry = store.get(target.rtype, target.namespace or "", target.name)
    if entry is None:
        raise RestError(not_found(target.rtype.plural, target.name, target.rtype.group))
    return entry.obj


def get_object(request: web.Request, store: ObjectStore, target: Target) -> web.Response:
    assert target.name is not None
    entry = store.get(target.rtype, target.namespace or "", target.name)
    if entry is None:
        raise RestError(not_found(target.rtype.plural, target.name, target.rtype.group))
    if target.sub is None and wants_table(request.headers.get("Accept", "")):
        meta = {"resourceVersion": entry.obj["metadata"]["resourceVersion"]}
        return web.Response(body=table(target.rtype, [entry], meta, store.clock()), content_type="application/json")
    return web.Response(body=entry.raw, content_type="application/json")


def _conflict(target: Target) -> RestError:
    plural = f"{target.rtype.plural}.{target.rtype.group}" if target.rtype.group else target.rtype.plural
    message = (
        f'Operation cannot be fulfilled on {plural} "{target.name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return RestError(status_response(409, message, name=target.name, kind=target.rtype.plural))


def _finish_update(old: dict[str, Any], new: dict[str, Any], target: Target) -> dict[str, Any]:
    """Keep what a client may not change on this endpoint, bump generation on a spec change."""
    if target.sub == "status":
        new = {**old, "status": new.get("status", old.get("status"))}
    elif "status" in old:
        new = {**new, "status": old["status"]}
    meta = dict(new.get("metadata") or {})
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if key in old["metadata"]:
            meta[key] = old["metadata"][key]
    if target.rtype.kind in GENERATION_KINDS or "generation" in old["metadata"]:
        generation = int(old["metadata"].get("generation", 1))
        meta["generation"] = generation + 1 if new.get("spec") != old.get("spec") else generation
    return {**new, "metadata": meta}


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        raise bad_request("the request body is not valid JSON") from None


def _dry_run(request: web.Request) -> bool:
    return bool(request.query.get("dryRun"))


_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _generated_name(meta: dict[str, Any]) -> dict[str, Any]:
    """``generateName``: the prefix plus five random characters, as the real API server does."""
    prefix = meta.get("generateName")
    if meta.get("name") or not isinstance(prefix, str) or not prefix:
        return meta
    return {**meta, "name": prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))}


def create_object(request: web.Request, store: ObjectStore, target: Target, body: Any) -> web.Response:
    rtype = target.rtype
    if "create" not in rtype.verbs:
        raise RestError(status_response(405, f"create is not supported on {rtype.plural}"))
    if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        body = {**body, "metadata": _generated_name(body["metadata"])}
    if not isinstance(body, dict) or not isinstance((body.get("metadata") or {}).get("name"), str):
        raise RestError(status_response(422, f"{rtype.kind} is invalid: metadata.name: Required value"))
    name = body["metadata"]["name"]
    namespace = target.namespace or ""
    if rtype.namespaced:
        body_ns = body["metadata"].get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request("the object namespace does not match the namespace on the request")
        if store.find("Namespace", namespace) is None:
            raise RestError(not_found("namespaces", namespace))
    if store.get(rtype, namespace, name) is not None:
        plural = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
        message = f'{plural} "{name}" already exists'
        raise RestError(status_response(409, message, reason="AlreadyExists", name=name, kind=rtype.plural))
    meta = {**body["metadata"], "creationTimestamp": store.now_rfc3339()}
    if rtype.namespaced:
        meta["namespace"] = namespace
    meta.pop("resourceVersion", None)
    obj = {**body, "metadata": meta}
    if _dry_run(request):
        return json_response(obj, 201)
    return web.Response(status=201, body=store.put(rtype, obj).raw, content_type="application/json")


def replace_object(request: web.Request, store: ObjectStore, target: Target, body: Any) -> web.Response:
    old = existing(store, target)
    if not isinstance(body, dict):
        raise bad_request("the body must be an object")
    meta = body.get("metadata") or {}
    if meta.get("name") not in (None, target.name):
        raise bad_request("the name of the object does not match the name on the URL")
    rv = meta.get("resourceVersion")
    if rv and rv != old["metadata"]["resourceVersion"]:
        raise _conflict(target)
    new = _finish_update(old, body, target)
    if _dry_run(request):
        return json_response(new)
    return web.Response(body=store.put(target.rtype, new).raw, content_type="application/json")


def patch_object(request: web.Request, store: ObjectStore, target: Target, body: Any) -> web.Response:
    old = existing(store, target)
    try:
        new = apply_patch(request.content_type, old, body)
    except PatchError as exc:
        if exc.conflict:
            raise _conflict(target) from None
        code = 415 if "does not support patch type" in str(exc) else 422
        raise RestError(status_response(code, str(exc), name=target.name, kind=target.rtype.plural)) from None
    rv = (new.get("metadata") or {}).get("resourceVersion")
    if rv and rv != old["metadata"]["resourceVersion"]:
        raise _conflict(target)
    new = _finish_update(old, new, target)
    if _dry_run(request):
        return json_response(new)
    return web.Response(body=store.put(target.rtype, new).raw, content_type="application/json")


def grace_period(request: web.Request, body: Any) -> int | None:
    text = request.query.get("gracePeriodSeconds")
    if text is None and isinstance(body, dict) and body.get("gracePeriodSeconds") is not None:
        text = str(body["gracePeriodSeconds"])
    try:
        return int(text) if text is not None else None
    except ValueError:
        raise bad_request(f"invalid gracePeriodSeconds {text!r}") from None


def delete_object(request: web.Request, store: ObjectStore, target: Target, body: Any) -> web.Response:
    """Objects with finalizers get a deletionTimestamp; others go at once (the kubelet confirms instantly)."""
    old = existing(store, target)
    meta = old["metadata"]
    preconditions = body.get("preconditions") if isinstance(body, dict) else None
    if isinstance(preconditions, dict):
        if preconditions.get("uid") not in (None, meta.get("uid")):
            raise _conflict(target)
        if preconditions.get("resourceVersion") not in (None, meta.get("resourceVersion")):
            raise _conflict(target)
    if _dry_run(request):
        return json_response(old)
    if meta.get("finalizers"):
        if meta.get("deletionTimestamp"):
            return json_response(old)
        new_meta = {**meta, "deletionTimestamp": store.now_rfc3339()}
        if target.rtype.kind == "Pod":
            grace = grace_period(request, body)
            if grace is None:
                grace = int((old.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
            new_meta["deletionGracePeriodSeconds"] = grace
        if target.rtype.kind == "Namespace":
            return json_response(
                store.put(target.rtype, {**old, "metadata": new_meta, "status": {"phase": "Terminating"}}).obj
            )
        return web.Response(
            body=store.put(target.rtype, {**old, "metadata": new_meta}).raw, content_type="application/json"
        )
    gone = store.remove(target.rtype, target.namespace or "", target.name or "")
    if gone is None:
        raise RestError(not_found(target.rtype.plural, target.name or "", target.rtype.group))
    if target.rtype.kind in ("Pod", "Node", "Namespace", "Event"):
        return web.Response(body=gone.raw, content_type="application/json")
    return json_response(success(target.name or "", target.rtype.plural, target.rtype.group))


def parse_body(raw: bytes) -> Any:
    return _body(raw)
