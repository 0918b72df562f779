"""The pod's own story: what the API says about a pod that does not run, compact and capped.

A diagnosis names a cause; the story is what the cause rests on and what a reader checks it
against at 3 a.m.: the pod's events from every source (scheduler, kubelet, autoscalers,
admission webhooks, other schedulers' controllers), its containers' waiting and terminated
reasons, its conditions and scheduling gates, the scheduler it waits for, and its owners'
conditions. Views show it under the verdict; JSON carries it as ``"story"``.

Plain data only: ``bot.kube.story`` builds it from API objects, the views render ``lines()``.
Events are deduplicated (one line per object, reason and message, counts added) and capped, so a
pod with 20,000 events is still a few lines. An event older than the pod's last relevant
transition is marked ``earlier``: history, never the current state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: how long one quoted message may be in the text views (JSON carries the same, capped at build)
LINE_CHARS = 240


@dataclass(frozen=True)
class StoryEvent:
    """One distinct event (repeats folded into ``count``), newest first in the story."""

    object: str
    type: str
    reason: str
    message: str
    source: str = ""
    count: int = 1
    #: when it last happened (RFC 3339), "" when the event carries no time
    last: str = ""
    #: seconds between ``last`` and the story's reference time (None: unknown)
    age_s: int | None = None
    #: older than the pod's last relevant transition: history, not the current state
    earlier: bool = False
    #: why it is history ("before the pod was scheduled at …")
    earlier_why: str = ""


@dataclass(frozen=True)
class StoryContainer:
    """A container that is not running and ready: its state, reasons and last words."""

    name: str
    init: bool
    state: str
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    restarts: int = 0
    last_reason: str = ""
    last_exit_code: int | None = None
    #: the last lines of the termination message (the container's own last words)
    termination_tail: str = ""


@dataclass(frozen=True)
class StoryCondition:
    """One of the pod's conditions as the story shows it: plain strings, so views and JSON render it
    without the API object."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    since: str = ""


@dataclass(frozen=True)
class StoryOwner:
    """A controller of the pod (ReplicaSet, Job, StatefulSet…) with its conditions that say why."""

    kind: str
    name: str
    conditions: list[StoryCondition] = field(default_factory=list)


@dataclass
class PodStory:
    """What the API says about one pod that is not Running and Ready."""

    pod: str
    phase: str
    status: str
    scheduler: str = "default-scheduler"
    node: str = ""
    gates: list[str] = field(default_factory=list)
    conditions: list[StoryCondition] = field(default_factory=list)
    containers: list[StoryContainer] = field(default_factory=list)
    owners: list[StoryOwner] = field(default_factory=list)
    events: list[StoryEvent] = field(default_factory=list)
    #: distinct events found (before the cap) and how many of them are not shown
    events_total: int = 0
    events_omitted: int = 0
    #: False when the events could not be read (a refused or failed read): none shown is unknown, not none
    events_read: bool = True
    #: what ``pod`` names: a Pod, or a workload (Deployment, Job…) that has no pod to tell of
    kind: str = "Pod"

    @property
    def current_events(self) -> list[StoryEvent]:
        return [e for e in self.events if not e.earlier]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self, *, max_events: int = 6) -> list[str]:
        """The story as short lines for text and Slack: state, gates, containers, owners, events."""
        where = f" on {self.node}" if self.node else ", not scheduled"
        sched = "" if self.scheduler == "default-scheduler" else f", scheduler {self.scheduler}"
        if self.kind == "Pod":
            out = [f"{self.pod}: {self.status} (phase {self.phase}){where}{sched}"]
        else:
            out = [f"{self.kind.lower()} {self.pod}: {self.status}; it has no pod"]
        if self.gates:
            out.append("scheduling gates: " + ", ".join(self.gates))
        said = {" ".join(e.message.split()) for e in self.events}
        seen: set[tuple[str, str, str]] = set()
        for c in self.conditions:
            if (c.status, c.reason, c.message) in seen:
                continue  # ContainersReady repeats Ready word for word
            seen.add((c.status, c.reason, c.message))
            # a condition that repeats an event's message names its reason and leaves the words to the event
            message = "" if " ".join(c.message.split()) in said else _cut(c.message)
            why = ": ".join(x for x in (c.reason, message) if x)
            out.append(f"condition {c.type}={c.status}" + (f" ({why})" if why else ""))
        for k in self.containers:
            out.append(_container_line(k))
        for o in self.owners:
            for c in o.conditions:
                message = "" if any(" ".join(c.message.split()) in m for m in said) else _cut(c.message)
                why = ": ".join(x for x in (c.reason, message) if x)
                out.append(f"{o.kind.lower()}/{o.name} {c.type}={c.status}" + (f" ({why})" if why else ""))
        shown = self.events[:max_events]
        for e in shown:
            out.append(_event_line(e))
        hidden = self.events_total - len(shown)
        if hidden > 0:
            out.append(f"… {hidden} more distinct event(s) (kubectl describe pod shows them)")
        if not self.events_read:
            out.append("events: could not be read (see what was skipped); none shown does not mean none exist")
        elif not self.events:
            out.append("no events on the pod or its controllers (none yet, or expired after about an hour)")
        return out


def _cut(text: str, limit: int = LINE_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _age(seconds: int | None) -> str:
    if seconds is None or seconds < 0:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _event_line(e: StoryEvent) -> str:
    times = f" x{e.count}" if e.count > 1 else ""
    age = _age(e.age_s)
    when = f" {age}" if age else (f" at {e.last}" if e.last else "")
    source = f" [{e.source}]" if e.source else ""
    head = "earlier: " if e.earlier else ""
    tail = f" ({e.earlier_why})" if e.earlier and e.earlier_why else ""
    return f"{head}{e.type} {e.reason}{times}{when}{source} {e.object}: {_cut(e.message)}{tail}"


def _container_line(k: StoryContainer) -> str:
    kind = "init container" if k.init else "container"
    words = k.state + (f" {k.reason}" if k.reason else "")
    if k.exit_code is not None:
        words += f" (exit code {k.exit_code})"
    if k.restarts:
        words += f", {k.restarts} restarts"
    if k.last_reason or k.last_exit_code is not None:
        code = f" exit code {k.last_exit_code}" if k.last_exit_code is not None else ""
        words += f"; last run ended {k.last_reason or 'terminated'}{code}"
    said = f": {_cut(k.message)}" if k.message else ""
    last = f" | last words: {_cut(k.termination_tail)}" if k.termination_tail else ""
    return f"{kind} {k.name} {words}{said}{last}"
