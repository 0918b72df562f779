"""Why the API server refused to create a workload's pods, from the controller's FailedCreate text.

The ReplicaSet, Job, StatefulSet or DaemonSet controller records ``FailedCreate`` with the API
server's refusal: a LimitRange (``maximum cpu usage per Container is 16, but request is 17``),
Pod Security admission (``violates PodSecurity "restricted:latest": …``), a missing service
account. Quota and webhook refusals have their own readers (``bot.kube.quota``, the webhook
check); a missing RuntimeClass is ``bot.kube.runtime_class``. No I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: (pattern, kind), first match wins
PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'violates PodSecurity "(?P<level>[^"]+)":\s*(?P<detail>.*)', re.S), "pod_security"),
    (re.compile(r"(?P<detail>(?:maximum|minimum) [\w.-]+ usage per (?:Container|Pod) is .*"
                r"|[\w.-]+ max limit to request ratio per (?:Container|Pod) is .*)", re.S), "limit_range"),
    (re.compile(r'(?P<detail>error looking up service account (?P<name>\S+?): serviceaccount "[^"]+" not found)'),
     "service_account"),
)
#: refusals another reader names (quota, webhook, RuntimeClass)
ELSEWHERE = re.compile(r"exceeded quota|failed quota|admission webhook \"|RuntimeClass \"[^\"]+\" not found")
_FORBIDDEN = re.compile(r"is (?:forbidden|invalid): (?P<detail>.*)", re.S)


@dataclass(frozen=True)
class CreateRefusal:
    """Why the API refused to create a workload's pods, sorted by kind, so the finding can give the
    fix for that kind (a Pod Security level, a LimitRange, a missing service account)."""

    #: pod_security | limit_range | service_account | other
    kind: str
    #: the refusal's own words after the pod name (the violated rules, the limit)
    detail: str
    #: Pod Security level and version ("restricted:latest"), when that is the refusal
    level: str = ""
    #: the object the refusal names (the missing service account, NAMESPACE/NAME)
    name: str = ""


def parse(message: str) -> CreateRefusal | None:
    """The refusal in a FailedCreate message; None when it is not one or another reader's."""
    text = message or ""
    if ELSEWHERE.search(text):
        return None
    for pattern, kind in PATTERNS:
        match = pattern.search(text)
        if match is not None:
            groups = match.groupdict()
            return CreateRefusal(kind, " ".join(str(groups.get("detail") or "").split())[:600],
                                 str(groups.get("level") or ""), str(groups.get("name") or ""))
    forbidden = _FORBIDDEN.search(text)
    if forbidden is not None and ("Error creating" in text or "failed error" in text or "forbidden" in text):
        return CreateRefusal("other", " ".join(forbidden.group("detail").split())[:600])
    return None
