"""``kind: Status`` error bodies exactly as the Kubernetes API writes them.

Clients (the official client's ApiException, kubectl's error printer, our probes' error
translation) read ``reason`` and ``code`` from these, so every error the simulator returns goes
through here. Never put request data other than the object's kind and name into a message.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.sim.store import dumps

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    name: str | None = None,
    kind: str | None = None,
    group: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, "Unknown"),
        "code": code,
    }
    details: dict[str, Any] = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    if kind is not None:
        details["kind"] = kind
    if code == 429:
        details["retryAfterSeconds"] = 1
    if details:
        body["details"] = details
    return body


def status_response(code: int, message: str, **kwargs: Any) -> web.Response:
    headers = {"Retry-After": "1"} if code == 429 else None
    return web.Response(
        status=code,
        body=dumps(status_body(code, message, **kwargs)),
        content_type="application/json",
        headers=headers,
    )


def not_found(plural: str, name: str, group: str = "") -> web.Response:
    resource = f"{plural}.{group}" if group else plural
    return status_response(404, f'{resource} "{name}" not found', name=name, kind=plural, group=group)


def success(name: str, kind: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
