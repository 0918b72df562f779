"""Alertmanager webhook payloads (version 4): parsed, grouped, enriched, one message per group.

``parse_payload`` checks the shape Alertmanager sends and turns it into an ``AlertGroup``; any
other shape is an ``AlertPayloadError`` with a one-line reason (the HTTP layer answers 400 and
posts nothing). A valid group is never refused for its size: Alertmanager sends every alert of a
group in one POST (its ``webhook_config.max_alerts`` defaults to 0, no limit, and the sender has
no body limit), and it does not retry a 4xx, so refusing a storm would lose it exactly when it
matters. The only bound is ``MAX_BODY_BYTES`` (16 MiB, ~40,000 alerts of ~400 bytes; parsing
8,000 alerts in 9 MiB takes ~0.15 s, 40,000 ~1 s on a loaded 2-core machine, in a worker thread),
which operators stay under with ``max_alerts`` (the alerts cut are counted in ``truncatedAlerts``
and shown). ``AlertDesk`` keeps one message per (group key, channel) in its memory: the first
payload of a group posts, every later one edits that message (alerts firing, resolving),
and each message carries a read-only diagnosis of the node or pod the group's labels name
(node-status for ``Hostname``/``node``/``kubernetes_node``, why-pending for ``namespace``+``pod``).
A first post is remembered before it is made (an empty ts) and its ts after, so a stop in between
makes the next delivery look for the message in the channel rather than post the group again.
This module knows no Slack and no HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from typing import Any, Protocol

import orjson

from bot.commands import Invocation
from bot.errors import GpubotError
from bot.observability import log_event
from bot.proactive.watcher import Diagnoses
from bot.report import Report
from bot.state.contracts import AlertGroups
from bot.state.records import POSTING

log = logging.getLogger("gpubot.alerts")

NODE_LABELS = ("Hostname", "node", "kubernetes_node")
#: label values that may reach a diagnosis: Kubernetes names, nothing else
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
#: the largest webhook body read (bytes, decompressed); beyond it 413, naming ``max_alerts``
MAX_BODY_BYTES = 16 * 1024 * 1024


class AlertPayloadError(GpubotError):
    """The body is not an Alertmanager version 4 webhook payload."""


@dataclass(frozen=True)
class Alert:
    """One alert of an Alertmanager webhook, reduced to what routing and the thread read."""

    status: str
    name: str
    labels: Mapping[str, str]
    summary: str


@dataclass(frozen=True)
class AlertGroup:
    """One Alertmanager notification: its group key keeps a storm of repeats in one thread, and
    ``truncated`` says how many alerts it left out rather than dropping them silently."""

    group_key: str
    status: str
    receiver: str
    alerts: tuple[Alert, ...]
    common_labels: Mapping[str, str]
    #: alerts Alertmanager left out of this payload (``webhook_config.max_alerts``)
    truncated: int = 0

    def firing(self) -> list[Alert]:
        return [a for a in self.alerts if a.status == "firing"]

    def node_of(self, alert: Alert) -> str:
        """The node an alert names (its own labels, else the group's common labels), or ``""``."""
        for labels in (alert.labels, self.common_labels):
            node = next((labels[k] for k in NODE_LABELS if labels.get(k)), "")
            if node:
                return node
        return ""

    @cached_property
    def digest(self) -> str:
        """What the group's message shows, hashed (computed once; with 40,000 alerts it costs)."""
        shown = [self.status, self.truncated, [(a.status, a.name, a.labels) for a in self.alerts]]
        return hashlib.sha256(orjson.dumps(shown, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]

    def target(self, cluster: str) -> Invocation | None:
        """The read-only diagnosis the group's labels ask for, or ``None``."""
        labels = dict(self.common_labels)
        if not any(k in labels for k in (*NODE_LABELS, "pod")) and self.alerts:
            labels = dict(self.alerts[0].labels)
        node = next((labels[k] for k in NODE_LABELS if labels.get(k)), "")
        if node and _NAME.match(node):
            return Invocation(command="node-status", nodes=(node,), cluster=cluster, surface="slack")
        pod, namespace = labels.get("pod", ""), labels.get("namespace", "")
        if pod and namespace and _NAME.match(pod) and _NAME.match(namespace):
            return Invocation(
                command="why-pending", kind="Pod", name=pod, namespace=namespace, cluster=cluster, surface="slack"
            )
        return None


def _labels(raw: Any, where: str) -> dict[str, str]:
    # JSON keys are strings already; the values are checked in C (a storm has 400,000 of them)
    if not isinstance(raw, dict) or not all(map(isinstance, raw.values(), repeat(str))):
        raise AlertPayloadError(f"{where}: expected a mapping of strings")
    return raw


def parse_payload(body: bytes) -> AlertGroup:
    """An Alertmanager v4 webhook body → its group; ``AlertPayloadError`` for anything else."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise AlertPayloadError("the body is not JSON") from None
    if not isinstance(data, dict):
        raise AlertPayloadError("the body is not a JSON object")
    if str(data.get("version")) != "4":
        raise AlertPayloadError("only Alertmanager webhook version 4 is accepted")
    group_key, status, alerts = data.get("groupKey"), data.get("status"), data.get("alerts")
    if not isinstance(group_key, str) or not group_key:
        raise AlertPayloadError("groupKey: expected a non-empty string")
    if status not in ("firing", "resolved"):
        raise AlertPayloadError("status: expected firing or resolved")
    if not isinstance(alerts, list) or not alerts:
        raise AlertPayloadError("alerts: expected a non-empty list of alerts")
    truncated = data.get("truncatedAlerts") or 0
    if not isinstance(truncated, int) or isinstance(truncated, bool) or truncated < 0:
        raise AlertPayloadError("truncatedAlerts: expected a number of alerts")
    parsed = []
    for n, item in enumerate(alerts):
        if not isinstance(item, dict) or item.get("status") not in ("firing", "resolved"):
            raise AlertPayloadError(f"alerts[{n}]: expected an alert with status firing or resolved")
        labels = _labels(item.get("labels"), f"alerts[{n}].labels")
        annotations = _labels(item.get("annotations") or {}, f"alerts[{n}].annotations")
        summary = annotations.get("summary") or annotations.get("description") or ""
        parsed.append(Alert(str(item["status"]), labels.get("alertname", "alert"), labels, summary))
    group = AlertGroup(
        group_key=group_key,
        status=str(status),
        receiver=str(data.get("receiver") or ""),
        alerts=tuple(parsed),
        common_labels=_labels(data.get("commonLabels") or {}, "commonLabels"),
        truncated=truncated,
    )
    _ = group.digest  # here, in the parsing thread, not later on the event loop
    return group


class AlertPoster(Protocol):
    """Where alert-group messages go (Slack: ``bot.slack.alert_route``)."""

    async def post_group(self, channel: str, group: AlertGroup, diagnosis: Report | None) -> str: ...

    async def update_group(self, channel: str, ts: str, group: AlertGroup, diagnosis: Report | None) -> None: ...

    async def find_posted(self, channel: str, group_key: str) -> str | None:
        """The group's message already in ``channel`` (after a stop mid-post), or ``None``; raises
        when the channel's history cannot be read."""
        ...


class AlertDesk:
    """One message per alert group and channel, remembered in ``groups`` (the state file's table,
    or with several replicas objects on the Kubernetes API, so a new leader edits the old
    leader's message instead of posting the group again)."""

    def __init__(
        self,
        groups: AlertGroups,
        service: Diagnoses,
        poster: AlertPoster,
        *,
        channel: str,
        cluster: str,
        is_leader: Callable[[], bool] = lambda: True,
    ) -> None:
        self.groups = groups
        #: only the leader replica posts; the HTTP route answers 503 on a follower, so that
        #: Alertmanager retries (and reaches the leader) rather than the alert being lost
        self.is_leader = is_leader
        self.service = service
        self.poster = poster
        self.channel = channel
        self.cluster = cluster

    async def receive(self, group: AlertGroup) -> str:
        """Post or edit the group's message; returns what happened (posted, updated, unchanged, or
        not-leader when the lease was lost between the request and its delivery)."""
        if not self.is_leader():
            log_event(log, "alert group not delivered: not the leader", level=logging.WARNING)
            return "not-leader"
        known = await asyncio.to_thread(self.groups.known, group.group_key, self.channel)
        if known is not None and not known[0]:  # a stop between the post and its record
            known = await self._earlier_post(group.group_key)
        if known is not None and known[1] == group.digest:
            return "unchanged"
        diagnosis = await self._diagnose(group)
        if known is None:
            # the intent first: a stop between the post and the record must not post twice
            await asyncio.to_thread(self.groups.remember, group.group_key, self.channel, POSTING, group.digest)
            ts = await self.poster.post_group(self.channel, group, diagnosis)
            outcome = "posted"
        else:
            ts = known[0]
            await self.poster.update_group(self.channel, ts, group, diagnosis)
            outcome = "updated"
        await asyncio.to_thread(self.groups.remember, group.group_key, self.channel, ts, group.digest)
        log_event(log, "alert group", outcome=outcome, alerts=len(group.alerts), status=group.status)
        return outcome

    async def _earlier_post(self, group_key: str) -> tuple[str, str] | None:
        """(ts, "") of the group's message found in the channel (shown, but of unknown content),
        or ``None`` (never posted, or the history could not be read: posting twice beats never)."""
        try:
            ts = await self.poster.find_posted(self.channel, group_key)
        except Exception as exc:
            log_event(log, "could not read the channel's history", level=logging.WARNING, error=type(exc).__name__)
            return None
        log_event(log, "an interrupted alert post", found=ts is not None)
        return (ts, "") if ts else None

    async def _diagnose(self, group: AlertGroup) -> Report | None:
        inv = group.target(self.cluster)
        if inv is None or group.status == "resolved":
            return None
        try:
            return await self.service.run(inv)
        except Exception as exc:  # the alert still goes out, without its diagnosis
            log_event(log, "alert diagnosis failed", level=logging.WARNING, error=type(exc).__name__)
            return None
