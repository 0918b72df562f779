"""An admission webhook denied pod creation: the controller's FailedCreate event says which."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import event_time
from bot.engine.facts import Facts


class SchedWebhookDenied(TypedDict):
    pod: str
    webhook: str
    message: str


SCHED_WEBHOOK_DENIED = Code("SCHED_WEBHOOK_DENIED", SchedWebhookDenied)

_WEBHOOK = re.compile(r'admission webhook "(?P<name>[^"]+)" denied the request:?\s*(?P<why>.*)', re.S)


def run(facts: Facts) -> Iterator[Detection]:
    """SCHED_WEBHOOK_DENIED from the newest denial on the pod or its owners."""
    t = facts.target
    if not t.kind:
        return
    for event in sorted(facts.events.owners + facts.events.pod, key=event_time, reverse=True):
        message = str(event.get("message") or "")
        match = _WEBHOOK.search(message)
        if not match:
            continue
        obj = event.get("involvedObject") or {}
        yield SCHED_WEBHOOK_DENIED.detect(
            f"{str(obj.get('kind', 'object')).lower()}/{t.namespace}/{obj.get('name', t.name)}",
            {
                "pod": f"{t.namespace}/{t.name}",
                "webhook": match.group("name"),
                "message": match.group("why")[:300],
            },
            evidence=[f"{obj.get('kind')}/{obj.get('name')}: {event.get('reason')}: {message[:1500]}"],
        )
        return


CHECK = Check(name="workload.webhook", reads=("target", "events"), emits=(SCHED_WEBHOOK_DENIED,), run=run)
