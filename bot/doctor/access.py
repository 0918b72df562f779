"""Ask the API server what gpubot's identity may do: one SelfSubjectAccessReview per permission.

A review is how ``kubectl auth can-i`` asks: the API server evaluates its own authorizers (RBAC,
webhooks) for the caller, so the answer is the cluster's, not our reading of the roles. Every
authenticated identity may create reviews (``system:basic-user``); they change nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson
from kubernetes.client import ApiClient, AuthorizationV1Api
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from bot.doctor.kube_calls import Perm

#: reviews in flight at once (each is one small POST)
CONCURRENCY = 8


class ReviewError(Exception):
    """A review could not be made (API unreachable, refused, timed out): no answer, not a "no"."""


def review_body(perm: Perm, namespace: str) -> dict[str, Any]:
    """The SelfSubjectAccessReview for ``perm`` (``namespace`` empty: cluster-wide, every namespace)."""
    resource, _, sub = perm.resource.partition("/")
    attrs: dict[str, str] = {"verb": perm.verb, "group": perm.group, "resource": resource}
    if sub:
        attrs["subresource"] = sub
    if namespace:
        attrs["namespace"] = namespace
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}


def _one(api: AuthorizationV1Api, perm: Perm, namespace: str, timeout: float) -> bool:
    try:
        resp = api.create_self_subject_access_review(
            review_body(perm, namespace), _preload_content=False, _request_timeout=timeout
        )
        answer = orjson.loads(resp.data)
    except ApiException as exc:
        raise ReviewError(f"the access review was refused ({exc.status} {exc.reason})") from None
    except (HTTPError, OSError) as exc:
        raise ReviewError(f"the API server did not answer the access review ({type(exc).__name__})") from None
    except orjson.JSONDecodeError:
        raise ReviewError("the access review's answer is not JSON") from None
    return bool(((answer or {}).get("status") or {}).get("allowed"))


async def can_i(api: ApiClient, asks: Sequence[tuple[Perm, str]], *, timeout: float) -> dict[tuple[Perm, str], bool]:
    """Whether each (permission, namespace) is allowed; ReviewError when any review fails."""
    authz = AuthorizationV1Api(api)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def ask(perm: Perm, namespace: str) -> bool:
        async with gate:
            return await asyncio.to_thread(_one, authz, perm, namespace, timeout)

    answers = await asyncio.gather(*(ask(p, ns) for p, ns in asks))
    return dict(zip(asks, answers, strict=True))


def kubectl_can_i(perm: Perm, namespace: str, service_account: str) -> str:
    """The ``kubectl auth can-i`` line that asks the same question as the service account."""
    resource, _, sub = perm.resource.partition("/")
    what = f"{resource}.{perm.group}" if perm.group else resource
    parts = ["kubectl auth can-i", perm.verb, what]
    if sub:
        parts.append(f"--subresource={sub}")
    parts.append(f"-n {namespace}" if namespace else "--all-namespaces")
    parts.append(f"--as=system:serviceaccount:{service_account}")
    return " ".join(parts)
