"""Why the kubelet cannot pull a container's image, read from the pod's status and its events.

``ImagePullBackOff`` alone says only that the kubelet is waiting before it tries again; the reason
is in the newest ``Failed to pull image "X": …`` event (or, on the first failure, in the
``ErrImagePull`` waiting message). The registry's words name the cause: the tag does not exist,
the credentials are missing or wrong, the registry rate-limits, the node cannot reach it. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]

#: container waiting reasons that mean the image is not there yet
PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                          "RegistryUnavailable", "ImageInspectError"})

#: (registry / runtime wording, cause), first match wins: a 429 or a 401 also mention the
#: manifest URL, so they are tried before "not found"
CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"toomanyrequests|429 Too Many Requests|pull rate limit|rate limit", re.I), "rate_limited"),
    (re.compile(r"unauthorized|\b401\b|\b403\b|authentication required|pull access denied|no basic auth"
                r"|access to the resource is denied|insufficient_scope|denied:|forbidden", re.I), "auth"),
    (re.compile(r"no match for platform|does not match the specified platform|exec format", re.I), "platform"),
    (re.compile(r"not found|manifest unknown|name unknown|NotFound", re.I), "not_found"),
    (re.compile(r"i/o timeout|dial tcp|connection refused|no such host|TLS handshake|x509|deadline exceeded"
                r"|network is unreachable|connection reset|\bEOF\b", re.I), "network"),
    (re.compile(r"no space left on device", re.I), "disk"),
)
_FAILED_PULL = re.compile(r'Failed to pull image "(?P<image>[^"]+)"')
_BACKOFF_ONLY = re.compile(r'^\s*Back-off pulling image "[^"]+"\s*$')


@dataclass(frozen=True)
class PullFailure:
    """One container whose image the kubelet cannot pull."""

    container: str
    image: str
    #: the container's waiting reason (ErrImagePull, ImagePullBackOff…)
    reason: str
    #: rate_limited | auth | platform | not_found | network | disk | invalid_name | never_pull | unknown | other
    cause: str
    #: the kubelet's most telling words: the failed pull's message, else the waiting message
    message: str
    init: bool = False


def classify(reason: str, message: str) -> str:
    """The cause of one pull failure from the waiting reason and the kubelet's message."""
    if reason == "InvalidImageName":
        return "invalid_name"
    if reason == "ErrImageNeverPull":
        return "never_pull"
    if not message or _BACKOFF_ONLY.match(message):
        return "unknown"
    for pattern, cause in CAUSES:
        if pattern.search(message):
            return cause
    return "other"


def _pull_messages(events: Iterable[Obj]) -> dict[str, str]:
    """image -> the newest ``Failed to pull image`` message (events newest first)."""
    out: dict[str, str] = {}
    for event in events:
        message = str(event.get("message") or event.get("note") or "")
        match = _FAILED_PULL.search(message)
        if match is not None:
            out.setdefault(match.group("image"), message)
    return out


def _stamp(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


def pull_failures(pod: Obj, events: Sequence[Obj] = ()) -> list[PullFailure]:
    """Every container of ``pod`` waiting on its image, with the cause the kubelet gave."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    images = {str(c.get("name")): str(c.get("image") or "") for c in
              [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
    by_image = _pull_messages(sorted(events, key=_stamp, reverse=True))
    out = []
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for cs in status.get(key) or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = str(waiting.get("reason") or "")
            if reason not in PULL_REASONS:
                continue
            name = str(cs.get("name") or "")
            image = images.get(name) or str(cs.get("image") or "")
            waiting_message = str(waiting.get("message") or "")
            message = by_image.get(image) or next(
                (m for i, m in by_image.items() if i.endswith(image) or image.endswith(i)), "")
            message = message or waiting_message
            out.append(PullFailure(name, image, reason, classify(reason, message), message, init))
    return out
